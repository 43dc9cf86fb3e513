/*
 * stageloadctl top: a live view. On a terminal it redraws in place (free
 * %, swap, pressure, sparklines of the last minutes from history plus live
 * samples, the job table and the last few jobs that ended under it) until q
 * or Ctrl-C; otherwise it prints one plain line per sample.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "cli.h"

#define JOBS_REFRESH_MS 2000
/* The ended jobs under the table, newest first. */
#define TOP_ENDS 5

static int cmd_top(struct cli *, struct cli_args *);

static const struct cli_option top_options[] = {
    {"minutes", 0, CLI_INT, "N", 1, 7 * 24 * 60,
     "span of the sparkline (default 10)"},
    {NULL, 0, 0, NULL, 0, 0, NULL},
};

const struct cli_entry cmd_top_entry = {
    .name = "top",
    .summary = "live view of memory, swap, pressure and jobs (q quits)",
    .options = top_options,
    .no_json = "a view; meter writes the same samples as JSON lines",
    .exec = cmd_top,
};

struct point {
	int64_t ts_ms;
	double free_pct;
	double swap_used;
};

struct top {
	struct cli *cli;
	int64_t span_ms;
	int color;
	struct point *pts;
	size_t npts, cap;
	struct sl_sample last;
	int have_last;
	struct sl_job *jobs;
	size_t njobs;
	struct sl_job *ends; /* the last ended ones: TOP_ENDS at most */
	size_t nends;
	int64_t jobs_at_ms;
	int jobs_dirty;
};

static struct termios saved_tio;
static int tio_saved;
static int atexit_set;
static int sig_fds[2] = {-1, -1};

static void
on_signal(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;

	(void)!write(sig_fds[1], &c, 1);
	errno = saved;
}

/* Leave the terminal as we found it, whatever way we exit. */
static void
restore_terminal(void)
{
	if (!tio_saved)
		return;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	fputs("\033[?7h\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tio_saved = 0;
}

static int
setup_terminal(void)
{
	struct termios tio;

	if (tcgetattr(STDIN_FILENO, &saved_tio) == -1)
		return -errno;
	tio = saved_tio;
	/* Keys one at a time without echo; ISIG stays so Ctrl-C still
	 * raises SIGINT, which we turn into a clean exit. */
	tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	tio.c_cc[VMIN] = 0;
	tio.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &tio) == -1)
		return -errno;
	tio_saved = 1;
	if (!atexit_set)
		atexit(restore_terminal);
	atexit_set = 1;
	/* Without autowrap a line wider than the terminal is cut at its
	 * edge instead of pushing the rest of the view down. */
	fputs("\033[?1049h\033[?25l\033[?7l", stdout);
	return 0;
}

static void draw(struct top *t);

/* Ctrl-Z: the shell gets its terminal back while we are stopped, and the
 * view is set up and drawn again when we continue. */
static void
suspend(struct top *t, int tty)
{
	if (tty)
		restore_terminal();
	cli_stop_self();
	if (tty && setup_terminal() == 0 && t->have_last)
		draw(t);
}

static int
setup_signals(void)
{
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,
	                           SIGQUIT, SIGTSTP, SIGWINCH};
	struct sigaction sa;
	size_t i;

	if (pipe(sig_fds) == -1)
		return -errno;
	for (i = 0; i < 2; i++) {
		fcntl(sig_fds[i], F_SETFD, FD_CLOEXEC);
		fcntl(sig_fds[i], F_SETFL,
		      fcntl(sig_fds[i], F_GETFL) | O_NONBLOCK);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* A frame being written when Ctrl-Z or a resize comes must not lose
	 * its bytes (and leave stdout's error set, which ends top with
	 * "cannot write output"); poll() returns EINTR all the same. */
	sa.sa_flags = SA_RESTART;
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
	return 0;
}

static void
add_point(struct top *t, int64_t ts, double free_pct, double swap)
{
	size_t i, keep = 0;

	if (t->npts == t->cap) {
		/* drop what has scrolled out before growing */
		int64_t horizon = ts - t->span_ms;
		for (i = 0; i < t->npts; i++)
			if (t->pts[i].ts_ms >= horizon)
				t->pts[keep++] = t->pts[i];
		t->npts = keep;
	}
	if (t->npts == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct point *p = realloc(t->pts, cap * sizeof *p);
		if (p == NULL)
			return;
		t->pts = p;
		t->cap = cap;
	}
	t->pts[t->npts].ts_ms = ts;
	t->pts[t->npts].free_pct = free_pct;
	t->pts[t->npts].swap_used = swap;
	t->npts++;
}

/* The terminal's size; 80x24 where it does not say. */
static void
terminal_size(int *cols, int *rows)
{
	struct winsize ws;

	*cols = 80;
	*rows = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		if (ws.ws_col > 0)
			*cols = ws.ws_col;
		if (ws.ws_row > 0)
			*rows = ws.ws_row;
	}
}

/* Sparkline cells: the width less the 10 of the label before them. */
static size_t
spark_cells(void)
{
	int cols, rows;

	terminal_size(&cols, &rows);
	return cols > 11 ? (size_t)cols - 10 : 1;
}

/* Average the points into ncols columns ending now. */
static void
columns(const struct top *t, int64_t now, size_t ncols, double *free_col,
        double *swap_col)
{
	double *nf = calloc(ncols, sizeof *nf);
	int64_t start = now - t->span_ms;
	size_t i, k;

	for (k = 0; k < ncols; k++)
		free_col[k] = swap_col[k] = 0;
	for (i = 0; nf != NULL && i < t->npts; i++) {
		const struct point *p = &t->pts[i];
		if (p->ts_ms < start || p->ts_ms > now)
			continue;
		k = (size_t)((p->ts_ms - start) * (int64_t)ncols / t->span_ms);
		if (k >= ncols)
			k = ncols - 1;
		free_col[k] += p->free_pct;
		swap_col[k] += p->swap_used;
		nf[k]++;
	}
	for (k = 0; k < ncols; k++) {
		if (nf == NULL || nf[k] == 0) {
			free_col[k] = swap_col[k] = NAN;
		} else {
			free_col[k] /= nf[k];
			swap_col[k] /= nf[k];
		}
	}
	free(nf);
}

static const char *
pressure_color(const struct top *t, const char *p)
{
	static const char *const colors[] = {"\033[32m", "\033[33m",
	                                     "\033[31;1m"};
	int level = names_pressure_level(p);

	/* By level (proto/names.h): normal green, warn yellow, critical
	 * bold red. */
	if (!t->color || level < 0 ||
	    level >= (int)(sizeof colors / sizeof colors[0]))
		return "";
	return colors[level];
}

static void
refresh_jobs(struct top *t)
{
	struct sl_job *jobs;
	size_t n, i, live = 0, ends = 0;

	/* The live jobs, then the ended ones newest first (status's order):
	 * the first TOP_ENDS of these go under the table. */
	if (sl_status(t->cli->client, 1, TOP_ENDS, &jobs, &n) < 0)
		return;
	for (i = 0; i < n; i++)
		if (!sl_job_ended(&jobs[i]))
			live++;
	sl_jobs_free(t->jobs, t->njobs);
	sl_jobs_free(t->ends, t->nends);
	t->jobs = calloc(live > 0 ? live : 1, sizeof *t->jobs);
	t->ends = calloc(TOP_ENDS, sizeof *t->ends);
	t->njobs = t->nends = 0;
	if (t->jobs == NULL || t->ends == NULL) {
		free(t->jobs);
		free(t->ends);
		t->jobs = t->ends = NULL;
		sl_jobs_free(jobs, n);
		return;
	}
	/* Moved, not copied: the array's own slots are cleared. */
	for (i = 0; i < n; i++) {
		if (!sl_job_ended(&jobs[i]))
			t->jobs[t->njobs++] = jobs[i];
		else if (ends < TOP_ENDS)
			t->ends[ends++] = jobs[i];
		else
			sl_job_clear(&jobs[i]);
	}
	t->nends = ends;
	free(jobs);
	t->jobs_at_ms = clock_wall_ms();
	t->jobs_dirty = 0;
}

/* Lines of the view besides the job rows: the title; free, swap and
 * pressure; the sparklines (free %, swap when there is swap) and their
 * scale; a blank line between these parts; the table's header; the line
 * saying how many more jobs there are; and the last line, left empty (the
 * newline ending the line before it would scroll the screen). */
static size_t
fixed_lines(int blanks, int sparks, int have_swap)
{
	size_t n = 1 + 3 + 1 + 1 + 1;

	if (sparks)
		n += 2 + (have_swap ? 1 : 0);
	if (blanks)
		n += sparks ? 3 : 2;
	return n;
}

/* The job table, as many rows as fit. */
static void
draw_jobs(struct top *t, int64_t now, size_t maxrows)
{
	static const char *const head[] = {"ID",        "USER",       "STATE",
	                                   "REASON",    "NAME",       "RAN",
	                                   "FOOTPRINT", "SWAP/BUDGET"};
	static const int right[] = {1, 0, 0, 0, 0, 1, 1, 1};
	double free_pct = t->have_last ? t->last.free_pct : NAN;
	int64_t avail = t->have_last ? (int64_t)t->last.available_bytes : 0;
	int64_t reserved = cli_reserved_bytes(t->jobs, t->njobs);
	struct cli_table tab;
	char c[8][128];
	const char *cells[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
	size_t i, shown = t->njobs < maxrows ? t->njobs : maxrows;

	if (cli_table_init(&tab, 8, head, right) < 0)
		return;
	for (i = 0; i < shown; i++) {
		const struct sl_job *j = &t->jobs[i];
		snprintf(c[0], sizeof c[0], "%" PRId64, j->id);
		cli_fit(j->user, 10, c[1], sizeof c[1]);
		cli_job_state(j, c[2], sizeof c[2]);
		cli_job_reason(j, free_pct, avail, reserved, CLI_REASON_COLUMN,
		               c[3], sizeof c[3]);
		cli_fit(j->name, 18, c[4], sizeof c[4]);
		cli_job_ran(j, now, c[5], sizeof c[5]);
		if (j->started_at_ms > 0)
			cli_size(j->footprint_bytes, c[6], sizeof c[6]);
		else
			snprintf(c[6], sizeof c[6], "-");
		cli_job_swap(j, c[7], sizeof c[7]);
		cli_table_add(&tab, cells);
	}
	cli_table_print_rows(&tab, stdout, shown + 1, "\033[K");
	cli_table_free(&tab);
	if (t->njobs > shown)
		printf("... and %zu more\033[K\n", t->njobs - shown);
}

/* The last jobs that ended, under the table: a killed one is marked
 * with "!" (bold red with colour), as it is what top would otherwise
 * drop without a word. */
static void
draw_ends(struct top *t, size_t rows, int blank)
{
	static const char *const head[] = {"",     "ID",    "USER",
	                                   "NAME", "ENDED", "HOW"};
	static const int right[] = {0, 1, 0, 0, 0, 0};
	struct cli_table tab;
	char c[6][128];
	const char *cells[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
	size_t i, shown = t->nends < rows ? t->nends : rows;
	char *saved;

	if (shown == 0 || cli_table_init(&tab, 6, head, right) < 0)
		return;
	for (i = 0; i < shown; i++) {
		const struct sl_job *j = &t->ends[i];
		snprintf(c[0], sizeof c[0], "%s",
		         strcmp(j->state, "killed") == 0 ? "!" : " ");
		snprintf(c[1], sizeof c[1], "%" PRId64, j->id);
		cli_fit(j->user, 10, c[2], sizeof c[2]);
		cli_fit(j->name, 18, c[3], sizeof c[3]);
		cli_time(j->ended_at_ms, 0, c[4], sizeof c[4]);
		/* The clock time alone: a date is rarely needed here. */
		if ((saved = strchr(c[4], ' ')) != NULL)
			memmove(c[4], saved + 1, strlen(saved + 1) + 1);
		cli_job_state(j, c[5], sizeof c[5]);
		cli_table_add(&tab, cells);
	}
	if (blank)
		printf("\033[K\n");
	printf("last ends (! killed)\033[K\n");
	if (t->color) {
		/* The marked rows in bold red: print the table to a buffer
		 * and colour its lines that begin with the mark. */
		char *buf = NULL, *line, *next;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		if (m != NULL) {
			cli_table_print_rows(&tab, m, shown + 1, "\033[K");
			fclose(m);
			for (line = buf; line != NULL && *line != '\0';
			     line = next) {
				next = strchr(line, '\n');
				if (next != NULL)
					*next++ = '\0';
				if (line[0] == '!')
					printf("\033[31;1m%s\033[0m\n", line);
				else
					printf("%s\n", line);
			}
			free(buf);
		}
	} else
		cli_table_print_rows(&tab, stdout, shown + 1, "\033[K");
	cli_table_free(&tab);
}

static void
draw(struct top *t)
{
	const struct sl_sample *s = &t->last;
	const char *reset = t->color ? "\033[0m" : "";
	const char *spark = t->color ? "\033[36m" : "";
	int64_t now = clock_wall_ms();
	int cols, rows, blanks = 1, sparks = 1;
	int have_swap = s->swap_total_bytes > 0 || s->swap_used_bytes > 0;
	size_t ncols = spark_cells(), maxrows, fixed, i, endrows = 0;
	double *fc = calloc(ncols, sizeof *fc), *sc = calloc(ncols, sizeof *sc);
	double swap_max = 1;
	char *line = malloc(ncols * 3 + 1);
	char a[32], b[32], tm[64];

	if (fc == NULL || sc == NULL || line == NULL)
		goto out;
	terminal_size(&cols, &rows);
	/* As many job rows as fit, so a redraw never scrolls the top away;
	 * on a short terminal the blank lines go, then the sparklines, so
	 * that one job row at least is seen. */
	fixed = fixed_lines(blanks, sparks, have_swap);
	if (t->njobs > 0 && (size_t)rows <= fixed)
		fixed = fixed_lines(blanks = 0, sparks, have_swap);
	if (t->njobs > 0 && (size_t)rows <= fixed)
		fixed = fixed_lines(blanks, sparks = 0, have_swap);
	maxrows = (size_t)rows > fixed ? (size_t)rows - fixed : 0;
	/* The last ends take what the job rows leave (one job row at least
	 * stays): a line before them, their title and header, their rows. */
	if (t->nends > 0) {
		size_t need = t->njobs > 0 ? 1 : 0, extra = blanks + 2;
		if (t->njobs > 0 && t->njobs < maxrows)
			need = t->njobs;
		if (maxrows > need + extra)
			endrows = maxrows - need - extra;
		if (endrows > t->nends)
			endrows = t->nends;
		if (endrows > 0)
			maxrows -= endrows + extra;
	}
	fputs("\033[H", stdout);
	printf("stageload  %s  (q quits)\033[K\n",
	       cli_time(s->sampled_at_ms, 0, tm, sizeof tm));
	if (blanks)
		printf("\033[K\n");
	/* Labels in a column of 10, values from there. */
	printf("%-10s%.1f%%, %s available of %s\033[K\n", "free", s->free_pct,
	       cli_size(s->available_bytes, a, sizeof a),
	       cli_size(s->total_bytes, b, sizeof b));
	if (have_swap)
		printf("%-10s%s used of %s\033[K\n", "swap",
		       cli_size(s->swap_used_bytes, a, sizeof a),
		       cli_size(s->swap_total_bytes, b, sizeof b));
	else
		printf("%-10snone\033[K\n", "swap");
	printf("%-10s%s%s%s", "pressure", pressure_color(t, s->pressure),
	       s->pressure, reset);
	if (s->has_psi)
		printf(" (PSI some avg10 %.2f)", s->psi_some_avg10);
	printf("\033[K\n");
	if (sparks) {
		if (blanks)
			printf("\033[K\n");
		columns(t, now, ncols, fc, sc);
		for (i = 0; i < ncols; i++)
			if (!isnan(sc[i]) && sc[i] > swap_max)
				swap_max = sc[i];
		if ((double)s->swap_total_bytes > swap_max)
			swap_max = (double)s->swap_total_bytes;
		printf("%-10s%s%s%s\033[K\n", "free %", spark,
		       cli_sparkline(fc, ncols, 0, 100, line, ncols * 3 + 1),
		       reset);
		if (have_swap) {
			printf("%-10s%s%s%s\033[K\n", "swap", spark,
			       cli_sparkline(sc, ncols, 0, swap_max, line,
			                     ncols * 3 + 1),
			       reset);
			printf("%-10slast %s, 0..100%% and 0..%s\033[K\n", "",
			       cli_duration(t->span_ms, a, sizeof a),
			       cli_size((uint64_t)swap_max, b, sizeof b));
		} else {
			printf("%-10slast %s, 0..100%%\033[K\n", "",
			       cli_duration(t->span_ms, a, sizeof a));
		}
	}
	if (blanks)
		printf("\033[K\n");

	if (t->njobs == 0)
		printf("no jobs queued or running\033[K\n");
	else
		draw_jobs(t, now, maxrows);
	draw_ends(t, endrows, blanks);
	fputs("\033[J", stdout);
	fflush(stdout);
out:
	free(fc);
	free(sc);
	free(line);
}

static void
plain_line(const struct sl_sample *s)
{
	char a[32], b[32], c[32], tm[64];

	printf("%s free %.1f%% available %s swap %s/%s pressure %s\n",
	       cli_time(s->sampled_at_ms, 0, tm, sizeof tm), s->free_pct,
	       cli_size(s->available_bytes, a, sizeof a),
	       cli_size(s->swap_used_bytes, b, sizeof b),
	       cli_size(s->swap_total_bytes, c, sizeof c), s->pressure);
	fflush(stdout);
}

/* Seed the sparkline with what the daemon remembers. */
static void
load_history(struct top *t, size_t ncols)
{
	struct sl_history *h;
	int64_t now = clock_wall_ms(), step = t->span_ms / (int64_t)ncols;
	size_t i;

	if (step < 1000)
		step = 1000;
	if (sl_history(t->cli->client, now - t->span_ms, 0, step, 0, &h) < 0)
		return;
	for (i = 0; i < h->nbuckets; i++)
		add_point(t, h->buckets[i].ts_ms, h->buckets[i].free_pct.avg,
		          h->buckets[i].swap_used_bytes.avg);
	sl_history_free(h);
}

static int
cmd_top(struct cli *cli, struct cli_args *args)
{
	struct top t;
	struct sl_notification n;
	struct pollfd pfd[3];
	long minutes = (long)cli_number(args, "minutes", 10);
	int rc, tty, status = EXIT_OK, quit = 0;

	memset(&t, 0, sizeof t);
	t.cli = cli;
	t.span_ms = minutes * 60000;
	tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	t.color = cli_use_color(STDOUT_FILENO);

	if ((rc = cli_connect(cli)) != 0)
		return rc;
	if (setup_signals() < 0) {
		cli_error("cannot set up signals: %s", strerror(errno));
		return EXIT_ERR;
	}
	if (tty) {
		load_history(&t, spark_cells());
		refresh_jobs(&t);
	}
	if (sl_subscribe(cli->client, 1, tty, 0, NULL) < 0)
		return cli_fail(cli);
	if (tty && setup_terminal() < 0)
		tty = 0;

	while (!quit) {
		int nfds = 0;
		memset(pfd, 0, sizeof pfd);
		pfd[nfds].fd = sig_fds[0];
		pfd[nfds++].events = POLLIN;
		pfd[nfds].fd = sl_fd(cli->client);
		pfd[nfds++].events = POLLIN;
		if (tty) {
			pfd[nfds].fd = STDIN_FILENO;
			pfd[nfds++].events = POLLIN;
		}
		if (sl_pending(cli->client) == 0 &&
		    poll(pfd, (nfds_t)nfds, JOBS_REFRESH_MS) < 0 &&
		    errno != EINTR)
			break;
		{
			unsigned char sig;
			while (read(sig_fds[0], &sig, 1) == 1) {
				if (sig == SIGWINCH && tty && t.have_last)
					draw(&t);
				else if (sig == SIGTSTP)
					suspend(&t, tty);
				else if (sig != SIGWINCH)
					quit = 1;
			}
		}
		if (tty && (pfd[2].revents & POLLIN)) {
			char key;
			while (read(STDIN_FILENO, &key, 1) == 1)
				if (key == 'q' || key == 'Q')
					quit = 1;
		}
		if (quit)
			break;
		if (sl_process_input(cli->client) < 0) {
			restore_terminal();
			status = cli_fail(cli);
			break;
		}
		while (sl_next_notification(cli->client, 0, &n) == 1) {
			if (n.kind == SL_N_SAMPLE) {
				t.last = n.sample;
				t.have_last = 1;
				add_point(&t, n.sample.sampled_at_ms,
				          n.sample.free_pct,
				          (double)n.sample.swap_used_bytes);
				if (!tty)
					plain_line(&n.sample);
			} else if (n.kind == SL_N_EVENT) {
				t.jobs_dirty = 1;
			}
			sl_notification_clear(&n);
		}
		if (tty) {
			if (t.jobs_dirty ||
			    clock_wall_ms() - t.jobs_at_ms >= JOBS_REFRESH_MS)
				refresh_jobs(&t);
			if (t.have_last)
				draw(&t);
		}
	}
	restore_terminal();
	sl_jobs_free(t.jobs, t.njobs);
	sl_jobs_free(t.ends, t.nends);
	free(t.pts);
	return status;
}
