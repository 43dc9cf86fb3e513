/*
 * A small hash map from a 64-bit key to two 64-bit counters, for the
 * per-client, per-uid and per-job figures the notify layer keeps so that no
 * request or tick walks every client's list: open addressing with linear
 * probing, removal by backward shift (no tombstones). Key 0 is reserved.
 */
#ifndef SL_UMAP_H
#define SL_UMAP_H

#include <stddef.h>
#include <stdint.h>

struct umap_slot {
	uint64_t key; /* 0: empty */
	int64_t a, b;
};

struct umap {
	struct umap_slot *slots;
	size_t cap, n; /* cap is 0 or a power of two */
};

/* The slot of key, or NULL. */
struct umap_slot *umap_find(struct umap *m, uint64_t key);
/* The slot of key, added with zero counters when absent; NULL when out of
 * memory. A pointer into the map: valid until the next umap_get or
 * umap_del. */
struct umap_slot *umap_get(struct umap *m, uint64_t key);
void umap_del(struct umap *m, uint64_t key);
void umap_clear(struct umap *m); /* empty, keeps the memory */
void umap_free(struct umap *m);

#endif
