/* The protocol's words (names.h): lookups over its lists. */
#include <stddef.h>
#include <string.h>

#include "names.h"

const struct names_wait_words names_wait_words[NAMES_WAIT_COUNT] = {
#define NAMES_X(e, name, column, line, sentence)                               \
	[NAMES_WAIT_##e] = {name, column, line, sentence},
    NAMES_WAIT_LIST(NAMES_X)
#undef NAMES_X
};

const char *
names_wait_name(int w)
{
	if (w < 0 || w >= NAMES_WAIT_COUNT)
		return "unknown";
	return names_wait_words[w].name;
}

int
names_wait_parse(const char *name)
{
	size_t n;
	int i;

	if (name == NULL)
		return -1;
	/* The Job's "after N" is the after wait of job N. */
	n = strcspn(name, " ");
	if (name[n] == ' ' && strncmp(name, "after", n) != 0)
		return -1;
	for (i = 0; i < NAMES_WAIT_COUNT; i++)
		if (strlen(names_wait_words[i].name) == n &&
		    strncmp(name, names_wait_words[i].name, n) == 0)
			return i;
	return -1;
}

static const char *const state_names[NAMES_STATE_COUNT] = {
#define NAMES_X(e, name) [NAMES_STATE_##e] = name,
    NAMES_STATE_LIST(NAMES_X)
#undef NAMES_X
};

const char *
names_state_name(int s)
{
	if (s < 0 || s >= NAMES_STATE_COUNT)
		return "unknown";
	return state_names[s];
}

int
names_state_parse(const char *name)
{
	int i;

	for (i = 0; name != NULL && i < NAMES_STATE_COUNT; i++)
		if (strcmp(name, state_names[i]) == 0)
			return i;
	return -1;
}

/* clang-format off */
static const struct {
	const char *name, *text;
} ends[NAMES_END_COUNT] = {
	[NAMES_END_NONE] = {"", NULL},
	[NAMES_END_OTHER] = {"other", NULL},
#define NAMES_X(e, name, text) [NAMES_END_##e] = {name, text},
	NAMES_END_LIST(NAMES_X)
#undef NAMES_X
};
/* clang-format on */

const char *
names_end_name(int e)
{
	if (e < 0 || e >= NAMES_END_COUNT)
		return "other";
	return ends[e].name;
}

int
names_end_parse(const char *name)
{
	int i;

	if (name == NULL)
		return NAMES_END_NONE;
	for (i = NAMES_END_NONE + 1; i < NAMES_END_OTHER; i++)
		if (strcmp(name, ends[i].name) == 0)
			return i;
	return NAMES_END_OTHER;
}

const char *
names_end_text(const char *name)
{
	return ends[names_end_parse(name)].text;
}

static const struct {
	int value;
	const char *name;
	int level;
} pressures[] = {
#define NAMES_X(e, value, name, level) {value, name, level},
    NAMES_PRESSURE_LIST(NAMES_X)
#undef NAMES_X
};
#define NPRESSURES (sizeof pressures / sizeof pressures[0])

const char *
names_pressure_name(int value)
{
	size_t i;

	for (i = 0; i < NPRESSURES; i++)
		if (pressures[i].value == value)
			return pressures[i].name;
	return "unknown";
}

int
names_pressure_level(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < NPRESSURES; i++)
		if (strcmp(name, pressures[i].name) == 0)
			return pressures[i].level;
	return -1;
}

const char *
names_pressure_level_name(int level)
{
	size_t i;

	for (i = 0; i < NPRESSURES; i++)
		if (pressures[i].level == level)
			return pressures[i].name;
	return "unknown";
}

static const char *const event_names[NAMES_EVENT_COUNT] = {
#define NAMES_X(e, name) [NAMES_EVENT_##e] = name,
    NAMES_EVENT_LIST(NAMES_X)
#undef NAMES_X
};

const char *
names_event_name(int e)
{
	if (e < 0 || e >= NAMES_EVENT_COUNT)
		return "unknown";
	return event_names[e];
}
