/* The counter map (umap.h). */
#include <stdlib.h>
#include <string.h>

#include "umap.h"

static size_t
umap_hash(uint64_t key, size_t cap)
{
	/* Fibonacci hashing: ids and uids are small and sequential. */
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

struct umap_slot *
umap_find(struct umap *m, uint64_t key)
{
	size_t i;

	if (m->cap == 0 || key == 0)
		return NULL;
	for (i = umap_hash(key, m->cap); m->slots[i].key != 0;
	     i = (i + 1) & (m->cap - 1))
		if (m->slots[i].key == key)
			return &m->slots[i];
	return NULL;
}

static int
umap_grow(struct umap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16, i, j;
	struct umap_slot *s = calloc(cap, sizeof *s);

	if (s == NULL)
		return -1;
	for (i = 0; i < m->cap; i++) {
		if (m->slots[i].key == 0)
			continue;
		for (j = umap_hash(m->slots[i].key, cap); s[j].key != 0;
		     j = (j + 1) & (cap - 1))
			;
		s[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = s;
	m->cap = cap;
	return 0;
}

struct umap_slot *
umap_get(struct umap *m, uint64_t key)
{
	struct umap_slot *s;
	size_t i;

	if (key == 0)
		return NULL;
	if ((s = umap_find(m, key)) != NULL)
		return s;
	/* At most half full, so probes stay short. */
	if ((m->n + 1) * 2 > m->cap && umap_grow(m) != 0)
		return NULL;
	for (i = umap_hash(key, m->cap); m->slots[i].key != 0;
	     i = (i + 1) & (m->cap - 1))
		;
	m->slots[i].key = key;
	m->slots[i].a = m->slots[i].b = 0;
	m->n++;
	return &m->slots[i];
}

void
umap_del(struct umap *m, uint64_t key)
{
	struct umap_slot *s = umap_find(m, key);
	size_t i, j, h;

	if (s == NULL)
		return;
	i = (size_t)(s - m->slots);
	m->slots[i].key = 0;
	m->n--;
	/* Move back the entries of the run after i that probed past it. */
	for (j = (i + 1) & (m->cap - 1); m->slots[j].key != 0;
	     j = (j + 1) & (m->cap - 1)) {
		h = umap_hash(m->slots[j].key, m->cap);
		/* j's home is cyclically in (i, j]: it may stay. */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->slots[i] = m->slots[j];
		m->slots[j].key = 0;
		i = j;
	}
}

void
umap_clear(struct umap *m)
{
	if (m->cap > 0)
		memset(m->slots, 0, m->cap * sizeof *m->slots);
	m->n = 0;
}

void
umap_free(struct umap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}
