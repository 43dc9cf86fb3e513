/*
 * The portable half of the macOS backend: raw values exactly as the macOS
 * kernel hands them over go in, our structs come out. platform-darwin.c only
 * makes the system calls; everything that can be wrong about units, ranges
 * and error codes lives here, where it is compiled and unit-tested on every
 * OS (tests/test_darwin_convert.c). docs/macos.md says where each raw value
 * comes from.
 */
#ifndef SL_PLATFORM_DARWIN_CONVERT_H
#define SL_PLATFORM_DARWIN_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "platform.h"

/* The system-wide values read for one sample. */
struct darwin_vm_raw {
	uint64_t memsize; /* sysctl hw.memsize, bytes: installed RAM */
	/* sysctl hw.memsize_usable, bytes: the kernel's max_mem, what
	 * memorystatus_level is a share of; 0 when the kernel lacks it */
	uint64_t memsize_usable;
	int memorystatus_level; /* sysctl kern.memorystatus_level, 0-100 */
	int vm_pressure_level;  /* sysctl kern.memorystatus_vm_pressure_level */
	uint64_t swap_total;    /* sysctl vm.swapusage xsu_total, bytes */
	uint64_t swap_used;     /* sysctl vm.swapusage xsu_used, bytes */
	uint64_t page_size;     /* host_page_size(), bytes (16384 on arm64) */
	uint64_t free_count;    /* host_statistics64 HOST_VM_INFO64, pages */
	uint64_t wire_count;    /* idem, pages */
	uint64_t compressor_page_count; /* idem, pages held by the compressor */
};

/* The per-process values read for one pid, with the result of each call. */
struct darwin_proc_raw {
	int info_ret;   /* proc_pidinfo(PROC_PIDTBSDINFO) return value, bytes */
	int info_errno; /* errno after it, when info_ret is not the size */
	size_t info_size; /* sizeof(struct proc_bsdinfo) the call expected */
	uint32_t pbi_pid;
	uint32_t pbi_ppid;
	uint32_t pbi_pgid;
	uint32_t pbi_ruid;
	uint64_t pbi_start_tvsec;
	uint64_t pbi_start_tvusec;
	int rusage_ret;   /* proc_pid_rusage(RUSAGE_INFO_V4) return, 0 is ok */
	int rusage_errno; /* errno after it when it failed */
	uint64_t ri_phys_footprint;
};

/*
 * One vm.swapusage reading. xnu computes xsu_used = T1 - (T2 - U) from
 * three unlocked reads: the swap total (T1, which is also xsu_total), the
 * total again (T2) and the used segments (U). A swap file added between
 * T1 and T2 makes xsu_used U minus the file's size (wrapping to about
 * 2^64 when U is smaller); one removed makes it U plus the file's size.
 * docs/macos.md has the sources.
 */
struct darwin_swap_raw {
	uint64_t total; /* xsu_total */
	uint64_t used;  /* xsu_used */
};

/* How many vm.swapusage readings darwin_swap_pick may be given. */
#define DARWIN_SWAP_READS 4

/*
 * Of successive readings r[0..n), the index of the first one that can be
 * trusted: used <= total, and its total equal to the next reading's (the
 * total did not move while it was computed; a reading whose used is not
 * above total may still be torn, by a file removed, and only the next
 * reading's total shows it). -EAGAIN when none of r[0..n-1) is, and a
 * reason in cause: read once more, up to DARWIN_SWAP_READS in all.
 */
int darwin_swap_pick(const struct darwin_swap_raw *r, size_t n, char *cause,
                     size_t causelen);

/* kern.memorystatus_vm_pressure_level (1, 2, 4) to our level. */
enum pressure_level darwin_pressure_level(int raw);

/*
 * A system sample from raw values; ts_ms is left to the caller. Total and
 * available come from hw.memsize_usable (hw.memsize when it is 0), the
 * base memorystatus_level is a share of, so available / total is the free
 * %; one above hw.memsize is a unit mix-up: -ERANGE. A swap reading with
 * used above total is torn (darwin_swap_raw): -EAGAIN.
 */
int darwin_sys_convert(const struct darwin_vm_raw *raw, struct sys_sample *s,
                       char *cause, size_t causelen);

/* A process from raw values; -ESRCH when it had exited by then. */
int darwin_proc_convert(const struct darwin_proc_raw *raw,
                        struct proc_info *pi);

/* pbi_start_tvsec/usec as one opaque, ordered 64-bit start time. */
uint64_t darwin_start_time(uint64_t tvsec, uint64_t tvusec);

/*
 * The result of a proc_listchildpids/proc_listpgrppids call (a count of
 * pids; on failure 0 or -1, with errno, which the caller cleared before
 * the call) as a count or a negative errno. A process that has gone
 * (ESRCH) simply has no children: 0.
 */
int darwin_list_result(int ret, int err);

/*
 * Append pids[0..n) to out[0..*found) without duplicates and without
 * pid 0; *found may grow past max (platform_list_tree's contract), but no
 * more than max pids are written.
 */
void darwin_list_merge(const pid_t *pids, size_t n, pid_t *out, size_t max,
                       size_t *found);

/*
 * Is path in a folder macOS's privacy controls (TCC) guard from a process
 * that has not been granted access? In a home folder (/Users/NAME, or
 * home, the job's $HOME, wherever it is; NULL: none): Desktop, Documents,
 * Downloads, iCloud Drive (Library/Mobile Documents) and the file
 * providers' folders (Library/CloudStorage: Dropbox, OneDrive, Google
 * Drive); and any volume under /Volumes but the boot volume's alias there
 * (boot_alias, the name of /Volumes' link to /, or NULL), under which the
 * rest of the path is judged as from /. Judged from the path alone.
 */
int darwin_tcc_protected(const char *path, const char *home,
                         const char *boot_alias);

/*
 * The hint for a job that could not chdir or exec on path with err: for
 * EPERM on a protected path, the cause and the two ways out; "" otherwise.
 */
void darwin_spawn_hint(int err, const char *path, const char *home,
                       const char *boot_alias, char *buf, size_t len);

/*
 * The hint for a detached job that exited non-zero, from the end of its
 * log (text[0..len), not NUL-terminated): the first line that says
 * "Operation not permitted" about a path darwin_tcc_protected guards
 * (quoted, as Python prints it, or not, as cat and ls do) names that path,
 * the cause and the ways out; "" when there is none.
 */
void darwin_log_hint(const char *text, size_t len, const char *home,
                     const char *boot_alias, char *buf, size_t buflen);

/* getgrouplist's int array to a malloc'd gid_t array (macOS takes int *). */
int darwin_groups_convert(const int *in, int n, gid_t **out);

/*
 * LOCAL_PEERCRED's struct xucred to the peer's group list: cr_version
 * must be xucred_version (XUCRED_VERSION); cr_groups[0..cr_ngroups) is
 * copied to a malloc'd array, egid first, as getgroups() lists them in the
 * peer. cr_ngroups must be 1..max (max is the array's size, NGROUPS: 16):
 * the kernel always has the egid there. -EPROTO for another version,
 * -EINVAL for a count out of range.
 */
int darwin_peer_groups(unsigned cr_version, unsigned xucred_version,
                       int cr_ngroups, const gid_t *cr_groups, int max,
                       gid_t **out, int *n);

/*
 * Default paths. System: /var/run/stageload.sock and
 * /var/db/stageload/stageload.db. Per user: the socket is the clients'
 * (socket_user_path), which has no OS-specific code:
 * runtime_dir/stageload.sock when $XDG_RUNTIME_DIR is set, else
 * home/.stageload/stageload.sock when home is uid's directory, else
 * /tmp/stageload-UID/stageload.sock; the database is
 * home/Library/Application Support/stageload/stageload.db.
 */
int darwin_default_socket(int system, uid_t uid, const char *runtime_dir,
                          const char *home, char *buf, size_t len);
int darwin_default_db(int system, const char *home, char *buf, size_t len);

#endif
