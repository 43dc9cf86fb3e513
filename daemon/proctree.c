/*
 * A job's process tree. Members are kept in parallel arrays so the pid
 * array can be handed to platform_list_tree as the parent set as is.
 * Each sample reads every member once (platform_proc_info) and drops the
 * ones that are gone or whose start time changed (the pid was recycled);
 * every scan interval the process table is scanned for new children of
 * members and new members of the group.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "proctree.h"

/* A scan that finds new members looks again for their children, at most
 * this many times: one round per generation born since the last scan. */
#define SCAN_ROUNDS 8

struct proctree {
	pid_t root;
	pid_t pgid; /* <= 0: none */
	int64_t scan_interval_ms;
	int64_t last_scan_ms;
	int scanned;     /* a scan ran at least once */
	int group_alive; /* a live member is in pgid, as of the last sample */

	pid_t *pids;
	uint64_t *starts;
	pid_t *pgids;
	size_t n, cap;

	pid_t *found; /* platform_list_tree output */
	size_t found_cap;
};

struct tally {
	uint64_t footprint_bytes;
	uint64_t swap_bytes;
	size_t nprocs;
};

struct proctree *
proctree_new(pid_t pid, pid_t pgid, uint64_t start_time)
{
	struct proctree *t;

	if (pid <= 0 || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->root = pid;
	t->pgid = pgid > 0 ? pgid : 0;
	t->scan_interval_ms = PROCTREE_SCAN_INTERVAL_MS;
	t->cap = 4;
	t->pids = malloc(t->cap * sizeof(*t->pids));
	t->starts = malloc(t->cap * sizeof(*t->starts));
	t->pgids = malloc(t->cap * sizeof(*t->pgids));
	if (t->pids == NULL || t->starts == NULL || t->pgids == NULL) {
		proctree_free(t);
		return NULL;
	}
	t->pids[0] = pid;
	t->starts[0] = start_time;
	t->pgids[0] = t->pgid;
	t->n = 1;
	return t;
}

void
proctree_free(struct proctree *t)
{
	if (t == NULL)
		return;
	free(t->pids);
	free(t->starts);
	free(t->pgids);
	free(t->found);
	free(t);
}

void
proctree_set_scan_interval(struct proctree *t, int64_t interval_ms)
{
	t->scan_interval_ms = interval_ms >= 0 ? interval_ms : 0;
}

pid_t
proctree_root(const struct proctree *t)
{
	return t->root;
}

static int
is_member(const struct proctree *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->pids[i] == pid)
			return 1;
	return 0;
}

static void
drop(struct proctree *t, size_t i)
{
	t->n--;
	t->pids[i] = t->pids[t->n];
	t->starts[i] = t->starts[t->n];
	t->pgids[i] = t->pgids[t->n];
}

static void
count(struct tally *a, const struct proc_info *pi)
{
	a->footprint_bytes += pi->footprint_bytes;
	a->swap_bytes += pi->swap_bytes;
	a->nprocs++;
}

/*
 * Reads every member, dropping the ones that are gone or recycled. The
 * sample every interval may take the platform's cheaper reading; a scan
 * or a kill reads afresh (groups and parents as they are now).
 */
static void
measure(struct proctree *t, struct tally *a, int fresh)
{
	struct proc_info pi;
	size_t i = 0;
	int rc;

	t->group_alive = 0;
	while (i < t->n) {
		rc = fresh ? platform_proc_info(t->pids[i], &pi)
		           : platform_proc_sample(t->pids[i], &pi);
		if (rc == -ESRCH ||
		    (rc == 0 && pi.start_time != t->starts[i])) {
			drop(t, i);
			continue;
		}
		if (rc == 0) {
			t->pgids[i] = pi.pgid;
			if (t->pgid > 0 && pi.pgid == t->pgid)
				t->group_alive = 1;
			if (a != NULL)
				count(a, &pi);
		}
		/* Another error (EACCES under hidepid, say): keep it, as it
		 * may still be ours, but it cannot be measured. */
		i++;
	}
}

static int
add(struct proctree *t, const struct proc_info *pi)
{
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;
		pid_t *p, *g;
		uint64_t *s;

		if (cap > PROCTREE_MAX_PIDS)
			cap = PROCTREE_MAX_PIDS;
		if (cap <= t->n)
			return -E2BIG;
		/* Each realloc result is stored at once so a later failure
		 * leaves every array valid and at least t->n long. */
		if ((p = realloc(t->pids, cap * sizeof(*p))) == NULL)
			return -ENOMEM;
		t->pids = p;
		if ((s = realloc(t->starts, cap * sizeof(*s))) == NULL)
			return -ENOMEM;
		t->starts = s;
		if ((g = realloc(t->pgids, cap * sizeof(*g))) == NULL)
			return -ENOMEM;
		t->pgids = g;
		t->cap = cap;
	}
	t->pids[t->n] = pi->pid;
	t->starts[t->n] = pi->start_time;
	t->pgids[t->n] = pi->pgid;
	t->n++;
	return 0;
}

/* platform_list_tree into t->found, grown until everything fits. */
static int
list(struct proctree *t, const pid_t *parents, size_t nparents, pid_t pgid,
     size_t *nfound)
{
	int n;

	for (;;) {
		n = platform_list_tree(parents, nparents, pgid, t->found,
		                       t->found_cap);
		if (n < 0)
			return n;
		if ((size_t)n <= t->found_cap)
			break;
		size_t cap = (size_t)n + 64;
		pid_t *f;

		if (cap > 4 * PROCTREE_MAX_PIDS) {
			/* Not following more: take what fits. */
			n = (int)t->found_cap;
			break;
		}
		if ((f = realloc(t->found, cap * sizeof(*f))) == NULL)
			return -ENOMEM;
		t->found = f;
		t->found_cap = cap;
	}
	*nfound = (size_t)n;
	return 0;
}

/*
 * Adds the processes that are children of members or in the group. The
 * group is used only while a member is still in it: once all have left
 * or exited, its number may be reused by strangers.
 */
static int
scan(struct proctree *t, struct tally *a)
{
	size_t first = 0, end, nfound, i;
	pid_t pgid = t->group_alive ? t->pgid : 0;
	int round, rc = 0, err = 0;

	for (round = 0; round < SCAN_ROUNDS && first < t->n; round++) {
		end = t->n;
		/* Round one asks for children of every member; later
		 * rounds only for children of the members just added. */
		rc = list(t, t->pids + first, end - first, pgid, &nfound);
		if (rc != 0)
			return rc;
		for (i = 0; i < nfound; i++) {
			struct proc_info pi;
			pid_t pid = t->found[i];

			if (is_member(t, pid) ||
			    platform_proc_info(pid, &pi) != 0)
				continue;
			/* The pid may have been recycled between the scan and
			 * this read: check it again against the tree. */
			if (!(is_member(t, pi.ppid) ||
			      (pgid > 0 && pi.pgid == pgid)))
				continue;
			if ((rc = add(t, &pi)) != 0) {
				err = rc;
				break;
			}
			if (a != NULL)
				count(a, &pi);
		}
		first = end;
		pgid = 0; /* every group member was found in round one */
		if (err != 0)
			break;
	}
	t->scanned = 1;
	return err;
}

int
proctree_sample(struct proctree *t, int64_t now_ms, uint64_t *footprint_bytes,
                uint64_t *swap_bytes, size_t *nprocs)
{
	struct tally a = {0, 0, 0};
	int rc = 0;

	if (t == NULL)
		return -EINVAL;
	measure(t, &a, 0);
	/* A clock that went back (a wall clock set back) rescans at once
	 * rather than waiting for it to catch up. */
	if (t->n > 0 && (!t->scanned || now_ms < t->last_scan_ms ||
	                 now_ms - t->last_scan_ms >= t->scan_interval_ms)) {
		rc = scan(t, &a);
		t->last_scan_ms = now_ms;
	}
	if (footprint_bytes != NULL)
		*footprint_bytes = a.footprint_bytes;
	if (swap_bytes != NULL)
		*swap_bytes = a.swap_bytes;
	if (nprocs != NULL)
		*nprocs = a.nprocs;
	return rc;
}

int
proctree_refresh(struct proctree *t)
{
	if (t == NULL)
		return -EINVAL;
	measure(t, NULL, 1);
	return t->n > 0 ? scan(t, NULL) : 0;
}

int
proctree_pids(struct proctree *t, pid_t *out, size_t max, pid_t *pgid)
{
	size_t i;
	int rc;

	if (t == NULL)
		return -EINVAL;
	rc = proctree_refresh(t);
	if (rc != 0 && rc != -E2BIG)
		return rc;
	/* The scan added members just now; measure again so every pid
	 * handed out was verified by its start time a moment ago. */
	measure(t, NULL, 1);
	for (i = 0; i < t->n && i < max; i++)
		out[i] = t->pids[i];
	if (pgid != NULL)
		*pgid = t->group_alive ? t->pgid : 0;
	return t->n > (size_t)INT_MAX ? INT_MAX : (int)t->n;
}
