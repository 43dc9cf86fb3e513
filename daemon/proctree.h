/*
 * Follows one job's process tree over time, through platform.h only.
 *
 * A tree is a root pid (with its start time) and its process group, plus
 * every descendant found so far, each remembered with its start time so a
 * recycled pid is never counted or signalled. Descendants are found by
 * platform_list_tree, a full scan of the process table on Linux, at most
 * once per scan interval; the memory of the known processes is summed at
 * every sample. A descendant that leaves the process group (setsid,
 * setpgid) or is reparented after its parent exits stays in the tree for
 * as long as it lives. A process that is forked and whose parent exits
 * within one scan interval, in another process group, can be missed.
 */
#ifndef SL_PROCTREE_H
#define SL_PROCTREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCTREE_SCAN_INTERVAL_MS 1000
#define PROCTREE_MAX_PIDS 4096 /* a tree is not followed beyond this */

struct proctree;

/* NULL when out of memory. pgid <= 0: the tree has no group of its own. */
struct proctree *proctree_new(pid_t pid, pid_t pgid, uint64_t start_time);
void proctree_free(struct proctree *t);

/* How often proctree_sample rescans for new descendants (default 1000). */
void proctree_set_scan_interval(struct proctree *t, int64_t interval_ms);

/*
 * Sum RssAnon+RssShmem (macOS: phys_footprint) and swap over the live
 * processes of the tree, rescanning first when the scan interval has
 * passed since the last scan (now_ms is any monotonic clock in ms).
 * nprocs is 0 once every process of the tree has exited. Any out pointer
 * may be NULL. Returns 0, or a negative errno when a scan failed (the sums
 * over the processes already known are still written).
 */
int proctree_sample(struct proctree *t, int64_t now_ms,
                    uint64_t *footprint_bytes, uint64_t *swap_bytes,
                    size_t *nprocs);

/* Rescan now, whatever the interval. */
int proctree_refresh(struct proctree *t);

/*
 * For signalling the whole tree: rescans, then writes the live processes
 * (verified by start time just now) to out, at most max of them, and
 * returns how many there are (possibly > max) or a negative errno.
 * *pgid is the group to signal with kill(-pgid), or 0 when no process of
 * the tree is still in it (the number may have been reused).
 */
int proctree_pids(struct proctree *t, pid_t *out, size_t max, pid_t *pgid);

/* The root process as given to proctree_new. */
pid_t proctree_root(const struct proctree *t);

#endif
