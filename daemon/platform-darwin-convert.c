/*
 * Raw macOS kernel values to stageload samples. Nothing here calls the
 * kernel, so every rule below is unit-tested on Linux; see
 * platform-darwin-convert.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform-darwin-convert.h"
#include "socket-trust.h"

enum pressure_level
darwin_pressure_level(int raw)
{
	/* The sysctl answers NOTE_MEMORYSTATUS_PRESSURE_NORMAL, _WARN or
	 * _CRITICAL (1, 2, 4): xnu maps its internal levels, urgent
	 * included, to these (kern_memorystatus_notify.c). 8 is
	 * NOTE_MEMORYSTATUS_LOW_SWAP, a kevent flag the sysctl never
	 * answers. 0 and anything else is not guessed at. */
	switch (raw) {
	case 1:
		return PRESSURE_NORMAL;
	case 2:
		return PRESSURE_WARN;
	case 4:
		return PRESSURE_CRITICAL;
	default:
		return PRESSURE_UNKNOWN;
	}
}

static int
pages_to_bytes(uint64_t pages, uint64_t page_size, uint64_t *bytes)
{
	if (__builtin_mul_overflow(pages, page_size, bytes))
		return -EOVERFLOW;
	return 0;
}

int
darwin_sys_convert(const struct darwin_vm_raw *raw, struct sys_sample *s,
                   char *cause, size_t causelen)
{
	uint64_t free_bytes, wired, compressed, sum, total;
	uint64_t level;

	if (raw->memsize == 0) {
		snprintf(cause, causelen, "hw.memsize is 0");
		return -EINVAL;
	}
	/* memorystatus_level is pages available over max_mem's pages
	 * (vm_pressure_response), and hw.memsize_usable answers max_mem:
	 * installed RAM less what the firmware and kernel keep back. Its
	 * share of hw.memsize would overstate available by that much. */
	total = raw->memsize_usable != 0 ? raw->memsize_usable : raw->memsize;
	if (total > raw->memsize) {
		snprintf(cause, causelen,
		         "hw.memsize_usable %llu is above hw.memsize %llu",
		         (unsigned long long)raw->memsize_usable,
		         (unsigned long long)raw->memsize);
		return -ERANGE;
	}
	if (raw->memorystatus_level < 0 || raw->memorystatus_level > 100) {
		snprintf(cause, causelen,
		         "kern.memorystatus_level %d is outside 0-100",
		         raw->memorystatus_level);
		return -ERANGE;
	}
	if (raw->page_size == 0 ||
	    (raw->page_size & (raw->page_size - 1)) != 0) {
		snprintf(cause, causelen, "page size %llu is not a power of 2",
		         (unsigned long long)raw->page_size);
		return -EINVAL;
	}
	if (pages_to_bytes(raw->free_count, raw->page_size, &free_bytes) < 0 ||
	    pages_to_bytes(raw->wire_count, raw->page_size, &wired) < 0 ||
	    pages_to_bytes(raw->compressor_page_count, raw->page_size,
	                   &compressed) < 0 ||
	    __builtin_add_overflow(free_bytes, wired, &sum) ||
	    __builtin_add_overflow(sum, compressed, &sum) ||
	    sum > raw->memsize) {
		/* Free, wired and compressor pages are disjoint, so together
		 * they fit in RAM; if not, the counts and the page size
		 * disagree about the unit, and every byte figure is wrong. */
		snprintf(
		    cause, causelen,
		    "host_statistics64 pages (free %llu, wired %llu, "
		    "compressor %llu) at %llu bytes exceed hw.memsize %llu",
		    (unsigned long long)raw->free_count,
		    (unsigned long long)raw->wire_count,
		    (unsigned long long)raw->compressor_page_count,
		    (unsigned long long)raw->page_size,
		    (unsigned long long)raw->memsize);
		return -ERANGE;
	}

	if (raw->swap_used > raw->swap_total) {
		/* A swap file added while xnu computed xsu_used: the
		 * subtraction wrapped (darwin_swap_raw). Budgets are measured
		 * by used, so such a reading is never taken. */
		snprintf(
		    cause, causelen,
		    "vm.swapusage used %llu is above its total %llu: a torn "
		    "reading",
		    (unsigned long long)raw->swap_used,
		    (unsigned long long)raw->swap_total);
		return -EAGAIN;
	}

	memset(s, 0, sizeof *s);
	s->total_bytes = total;
	s->free_pct = raw->memorystatus_level;
	/*
	 * macOS has no MemAvailable. memorystatus_level is the kernel's own
	 * "available" share (the one its memory-status machinery acts on),
	 * so available bytes are that share of RAM: free % and available
	 * bytes then never disagree, and admission's effective free % is
	 * consistent with the plain one. The cost is 1 % granularity (about
	 * 480 MiB on a 48 GiB machine). free_count would be far too low: the
	 * kernel keeps few pages free and fills the rest with reclaimable
	 * cache. Split to keep total * level from overflowing.
	 */
	level = (uint64_t)raw->memorystatus_level;
	s->available_bytes = total / 100 * level + total % 100 * level / 100;
	s->swap_used_bytes = raw->swap_used;
	s->swap_total_bytes = raw->swap_total;
	s->pressure = darwin_pressure_level(raw->vm_pressure_level);
	s->psi_some_avg10 = -1;
	s->compressed_bytes = compressed;
	s->wired_bytes = wired;
	return 0;
}

int
darwin_swap_pick(const struct darwin_swap_raw *r, size_t n, char *cause,
                 size_t causelen)
{
	size_t i;

	for (i = 0; i + 1 < n; i++)
		if (r[i].used <= r[i].total && r[i].total == r[i + 1].total)
			return (int)i;
	if (n == 0)
		snprintf(cause, causelen, "vm.swapusage: no reading");
	else
		snprintf(cause, causelen,
		         "vm.swapusage changed under each of %zu readings "
		         "(last: used %llu, total %llu)",
		         n, (unsigned long long)r[n - 1].used,
		         (unsigned long long)r[n - 1].total);
	return -EAGAIN;
}

uint64_t
darwin_start_time(uint64_t tvsec, uint64_t tvusec)
{
	return tvsec * 1000000 + tvusec;
}

/* A failed libproc call's errno as our negative errno. libproc returns 0
 * with no errno for a pid that has just gone, so that too is -ESRCH. */
static int
proc_errno(int err)
{
	if (err == 0 || err == ESRCH)
		return -ESRCH;
	return -err;
}

int
darwin_proc_convert(const struct darwin_proc_raw *raw, struct proc_info *pi)
{
	if (raw->info_ret <= 0)
		return proc_errno(raw->info_errno);
	if ((size_t)raw->info_ret < raw->info_size)
		return -EIO;
	/* The process may exit between the two calls: the second one then
	 * fails, and the pid is as gone as if the first had. */
	if (raw->rusage_ret != 0)
		return proc_errno(raw->rusage_errno);

	memset(pi, 0, sizeof *pi);
	pi->pid = (pid_t)raw->pbi_pid;
	pi->ppid = (pid_t)raw->pbi_ppid;
	pi->pgid = (pid_t)raw->pbi_pgid;
	pi->uid = (uid_t)raw->pbi_ruid;
	pi->start_time =
	    darwin_start_time(raw->pbi_start_tvsec, raw->pbi_start_tvusec);
	pi->footprint_bytes = raw->ri_phys_footprint;
	/* macOS does not attribute swap to processes (docs/macos.md). */
	pi->swap_bytes = 0;
	return 0;
}

int
darwin_list_result(int ret, int err)
{
	/* libproc turns the system call's -1 into 0 and leaves errno, so a
	 * failure can look like "no pids": the caller clears errno first. */
	if (ret > 0 || (ret == 0 && err == 0))
		return ret;
	if (err == ESRCH)
		return 0;
	return err != 0 ? -err : -EIO;
}

void
darwin_list_merge(const pid_t *pids, size_t n, pid_t *out, size_t max,
                  size_t *found)
{
	size_t i, j, seen;

	for (i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue; /* libproc pads with 0; the kernel is pid 0 */
		/* Only the stored pids can be compared; once out is full a
		 * duplicate may be counted twice, which only makes the
		 * caller's retry buffer larger. */
		seen = *found < max ? *found : max;
		for (j = 0; j < seen; j++)
			if (out[j] == pids[i])
				break;
		if (j < seen)
			continue;
		if (*found < max)
			out[*found] = pids[i];
		(*found)++;
	}
}

/* Does path, after prefix, start with dir as a whole component? */
static int
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '/' || path[n] == '\0');
}

/* Is rest (a path relative to a home folder) in one TCC guards? */
static int
home_protected(const char *rest)
{
	static const char *const dirs[] = {"Desktop", "Documents", "Downloads",
	                                   "Library/Mobile Documents",
	                                   "Library/CloudStorage"};
	size_t i;

	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (under(rest, dirs[i]))
			return 1;
	return 0;
}

int
darwin_tcc_protected(const char *path, const char *home, const char *boot_alias)
{
	const char *rest, *name;
	size_t n;

	if (path == NULL || path[0] != '/')
		return 0;
	if (strncmp(path, "/Volumes/", 9) == 0 && path[9] != '\0' &&
	    path[9] != '/') {
		name = path + 9;
		n = strcspn(name, "/");
		/* /Volumes/Macintosh HD is a link to /: not a volume of its
		 * own, so what lies under it is judged from / (its
		 * /Users/NAME/Documents still counts). */
		if (boot_alias == NULL || strlen(boot_alias) != n ||
		    strncmp(name, boot_alias, n) != 0)
			return 1;
		if (name[n] == '\0')
			return 0;
		return darwin_tcc_protected(name + n, home, NULL);
	}
	n = home != NULL ? strlen(home) : 0;
	while (n > 1 && home[n - 1] == '/')
		n--;
	if (n > 1 && home[0] == '/' && strncmp(path, home, n) == 0 &&
	    path[n] == '/' && home_protected(path + n + 1))
		return 1;
	if (strncmp(path, "/Users/", 7) != 0)
		return 0;
	rest = path + 7;
	if ((rest = strchr(rest, '/')) == NULL || rest == path + 7)
		return 0; /* /Users/NAME itself, or /Users//... */
	return home_protected(rest + 1);
}

/* Short: it goes into a 256-byte cause with the path and errno. */
#define TCC_WAYS_OUT "give stageloadd Full Disk Access, or use stageloadctl run"

void
darwin_spawn_hint(int err, const char *path, const char *home,
                  const char *boot_alias, char *buf, size_t len)
{
	if (len == 0)
		return;
	buf[0] = '\0';
	if (err != EPERM || !darwin_tcc_protected(path, home, boot_alias))
		return;
	snprintf(buf, len,
	         "macOS privacy (TCC) blocks a LaunchDaemon's jobs "
	         "here: " TCC_WAYS_OUT);
}

#define EPERM_TEXT "Operation not permitted"

/*
 * The protected path named on line[0..n), if any, into path. A path starts
 * at a '/' that begins the line or follows a space, a quote or '(': quoted
 * ones end at the same quote, others at ": " or the line's end (names may
 * hold spaces: "Mobile Documents").
 */
static int
line_protected_path(const char *line, size_t n, const char *home,
                    const char *boot_alias, char *path, size_t pathlen)
{
	size_t i, end;
	char quote;

	for (i = 0; i < n; i++) {
		if (line[i] != '/')
			continue;
		quote = i > 0 && (line[i - 1] == '\'' || line[i - 1] == '"')
		            ? line[i - 1]
		            : '\0';
		if (i > 0 && quote == '\0' && line[i - 1] != ' ' &&
		    line[i - 1] != '(')
			continue;
		for (end = i; end < n; end++) {
			if (quote != '\0' ? line[end] == quote
			                  : end + 1 < n && line[end] == ':' &&
			                        line[end + 1] == ' ')
				break;
		}
		if (end - i >= pathlen)
			continue;
		memcpy(path, line + i, end - i);
		path[end - i] = '\0';
		if (darwin_tcc_protected(path, home, boot_alias))
			return 1;
	}
	return 0;
}

void
darwin_log_hint(const char *text, size_t len, const char *home,
                const char *boot_alias, char *buf, size_t buflen)
{
	const char *line = text, *nl, *end = text + len;
	char path[1024];
	size_t n, elen = strlen(EPERM_TEXT), i;

	if (buflen == 0)
		return;
	buf[0] = '\0';
	for (; line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (nl == NULL)
			nl = end;
		n = (size_t)(nl - line);
		for (i = 0; i + elen <= n; i++)
			if (memcmp(line + i, EPERM_TEXT, elen) == 0)
				break;
		if (i + elen > n ||
		    !line_protected_path(line, n, home, boot_alias, path,
		                         sizeof path))
			continue;
		snprintf(buf, buflen,
		         "its log shows \"" EPERM_TEXT "\" for %.200s: macOS "
		         "privacy (TCC) blocks a LaunchDaemon's jobs "
		         "there: " TCC_WAYS_OUT,
		         path);
		return;
	}
}

int
darwin_groups_convert(const int *in, int n, gid_t **out)
{
	int i;

	if (n < 0)
		return -EINVAL;
	*out = malloc(sizeof **out * (size_t)(n > 0 ? n : 1));
	if (*out == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		(*out)[i] = (gid_t)in[i];
	return 0;
}

int
darwin_peer_groups(unsigned cr_version, unsigned xucred_version, int cr_ngroups,
                   const gid_t *cr_groups, int max, gid_t **out, int *n)
{
	if (cr_version != xucred_version)
		return -EPROTO;
	if (cr_ngroups < 1 || cr_ngroups > max)
		return -EINVAL;
	if ((*out = malloc(sizeof **out * (size_t)cr_ngroups)) == NULL)
		return -ENOMEM;
	memcpy(*out, cr_groups, sizeof **out * (size_t)cr_ngroups);
	*n = cr_ngroups;
	return 0;
}

static int
path_fmt(char *buf, size_t len, const char *fmt, const char *a, unsigned long b)
{
	int n;

	if (a != NULL)
		n = snprintf(buf, len, fmt, a);
	else
		n = snprintf(buf, len, fmt, b);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
darwin_default_socket(int system, uid_t uid, const char *runtime_dir,
                      const char *home, char *buf, size_t len)
{
	if (system)
		return path_fmt(buf, len, "%s", SOCKET_SYSTEM_PATH, 0);
	/* Exactly the client's order (socket-trust.c), or the two would not
	 * meet. macOS's per-user $TMPDIR would be more private, but the
	 * client cannot know it without OS-specific code. */
	return socket_user_path(runtime_dir, home, uid, buf, len, NULL);
}

int
darwin_default_db(int system, const char *home, char *buf, size_t len)
{
	size_t homelen;
	int n;

	if (system)
		return path_fmt(buf, len, "%s",
		                "/var/db/stageload/stageload.db", 0);
	if (home == NULL || home[0] != '/')
		return -ENOENT;
	homelen = strlen(home);
	while (homelen > 0 && home[homelen - 1] == '/')
		homelen--;
	n = snprintf(buf, len,
	             "%.*s/Library/Application Support/stageload/stageload.db",
	             (int)homelen, home);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}
