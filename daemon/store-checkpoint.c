/*
 * The WAL's checkpoints, on a thread of their own.
 *
 * A checkpoint copies the WAL's pages into the database and syncs both: a
 * fraction of a millisecond on a quiet machine, tens to hundreds of
 * milliseconds after a burst of large writes (jobs with a megabyte of argv
 * and env), and on the loop every request and sample would wait for it.
 * sqlite's automatic checkpoint runs inside whichever commit takes the WAL
 * past 1000 pages, on the loop; setting a WAL hook turns it off, and the
 * hook here wakes this thread instead, which checkpoints through a second
 * connection of its own. A PASSIVE checkpoint takes no lock a writer needs,
 * so the loop's commits go on meanwhile; a reader's snapshot only holds
 * back the frames it still sees, which a later checkpoint copies.
 *
 * sqlite restarts the WAL (and cuts its file back to journal_size_limit)
 * only at a write that finds it all copied. Commits that come faster than
 * the thread copies them would keep that from ever happening, and the WAL
 * would grow without end: past STORE_CKPT_CAP_PAGES the loop finishes the
 * copy itself, in the commit, as sqlite's automatic checkpoint would, once
 * the thread's run (which copied most of it) is over.
 *
 * Without threads in the sqlite library (sqlite3_threadsafe() == 0), or
 * when the second connection cannot be opened, checkpoints stay on the
 * loop, as sqlite's automatic ones did.
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "store-internal.h"

#ifndef SQLITE_OPEN_NOFOLLOW
#define SQLITE_OPEN_NOFOLLOW 0
#endif

/* sqlite's own default for its automatic checkpoint: 4 MiB of pages. */
#define STORE_CKPT_PAGES 1000
/* The WAL's bound under writes faster than the thread: 32 MiB of pages. */
#define STORE_CKPT_CAP_PAGES (8 * STORE_CKPT_PAGES)
#define STORE_CKPT_STACK (512 * 1024)

struct store_ckpt {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* to the thread: want, held or stop changed */
	pthread_cond_t idle; /* from the thread: running went 0 */
	sqlite3 *db;         /* the thread's alone */
	int want, stop;
	int running; /* the thread is in a checkpoint */
	int held;    /* the loop is in one: the thread waits */
	/* under mu, for store_checkpoint_stats */
	uint64_t runs, capped;
	int64_t last_us, max_us;
	int last_rc;
};

static void *
ckpt_main(void *arg)
{
	struct store_ckpt *c = arg;
	int64_t t0, us;
	int rc;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while ((!c->want || c->held) && !c->stop)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop)
			break;
		c->want = 0;
		c->running = 1;
		pthread_mutex_unlock(&c->mu);
		t0 = clock_mono_us();
		rc = sqlite3_wal_checkpoint_v2(
		    c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		us = clock_mono_us() - t0;
		pthread_mutex_lock(&c->mu);
		c->running = 0;
		pthread_cond_broadcast(&c->idle);
		c->runs++;
		c->last_us = us;
		if (us > c->max_us)
			c->max_us = us;
		c->last_rc = rc;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void
ckpt_request(struct store_ckpt *c)
{
	pthread_mutex_lock(&c->mu);
	c->want = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* After each commit of the loop's connection, with the WAL's size; the
 * commit's lock is released, so the hook may checkpoint (sqlite's own
 * automatic checkpoint is such a hook). */
static int
ckpt_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct store_ckpt *c = arg;

	if (pages < STORE_CKPT_CAP_PAGES) {
		if (pages >= STORE_CKPT_PAGES)
			ckpt_request(c);
		return SQLITE_OK;
	}
	pthread_mutex_lock(&c->mu);
	c->held = 1;
	while (c->running)
		pthread_cond_wait(&c->idle, &c->mu);
	pthread_mutex_unlock(&c->mu);
	(void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
	                                NULL, NULL);
	pthread_mutex_lock(&c->mu);
	c->held = 0;
	c->want = 0; /* copied: nothing for the thread until the next */
	c->capped++;
	pthread_mutex_unlock(&c->mu);
	return SQLITE_OK;
}

static int
ckpt_in_wal(sqlite3 *db)
{
	sqlite3_stmt *st;
	const unsigned char *mode;
	int wal = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) !=
	    SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW &&
	    (mode = sqlite3_column_text(st, 0)) != NULL)
		wal = strcmp((const char *)mode, "wal") == 0;
	sqlite3_finalize(st);
	return wal;
}

void
store_checkpointer_start(struct store *s)
{
	struct store_ckpt *c;
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	if (sqlite3_threadsafe() == 0 || (c = calloc(1, sizeof *c)) == NULL)
		return;
	/* NOMUTEX: one thread at a time uses each connection (this one
	 * only the checkpointer, until store_checkpointer_stop joins it). */
	rc = sqlite3_open_v2(s->path, &c->db,
	                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW |
	                         SQLITE_OPEN_NOMUTEX,
	                     NULL);
	/* A connection opens its WAL at its first read; until then a
	 * checkpoint through it does nothing. */
	if (rc == SQLITE_OK && !ckpt_in_wal(c->db))
		rc = SQLITE_ERROR;
	if (rc != SQLITE_OK) {
		sqlite3_close(c->db);
		free(c);
		return;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_cond_init(&c->idle, NULL);
	pthread_attr_init(&attr);
	(void)pthread_attr_setstacksize(&attr, STORE_CKPT_STACK);
	/* Signals are the loop's: the thread starts with all blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&c->thread, &attr, ckpt_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pthread_cond_destroy(&c->idle);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		sqlite3_close(c->db);
		free(c);
		return;
	}
	s->ckpt = c;
	sqlite3_wal_hook(s->db, ckpt_wal_hook, c);
}

void
store_checkpointer_stop(struct store *s)
{
	struct store_ckpt *c = s->ckpt;

	if (c == NULL)
		return;
	sqlite3_wal_hook(s->db, NULL, NULL);
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->idle);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	sqlite3_close(c->db);
	free(c);
	s->ckpt = NULL;
}

int
store_checkpoint(struct store *s)
{
	int rc;

	if (s->ckpt != NULL) {
		ckpt_request(s->ckpt);
		return 0;
	}
	rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
	                               NULL, NULL);
	return rc == SQLITE_OK ? 0 : store_errno(rc);
}

int
store_checkpoint_stats(struct store *s, struct store_ckpt_stats *st)
{
	struct store_ckpt *c = s->ckpt;

	memset(st, 0, sizeof *st);
	if (c == NULL)
		return -ENOTSUP;
	pthread_mutex_lock(&c->mu);
	st->runs = c->runs;
	st->capped = c->capped;
	st->last_us = c->last_us;
	st->max_us = c->max_us;
	st->last_rc = c->last_rc == SQLITE_OK ? 0 : store_errno(c->last_rc);
	pthread_mutex_unlock(&c->mu);
	return 0;
}
