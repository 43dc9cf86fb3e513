/*
 * The helpers of the command line that client/cli-reason.c needs, apart
 * from the rest of cli.c: stageload-web compiles these two files too, so
 * that its page says why a job waits, its sizes and its states with the
 * same words as `status`, `run` and `show`.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "text.h"
#include "units.h"

const char *
cli_size(uint64_t bytes, char *buf, size_t len)
{
	return units_format_size(bytes, buf, len);
}

const char *
cli_safe(const char *s, size_t max, char *buf, size_t len)
{
	proto_text_escape(s, strlen(s), 0, max, buf, len, NULL);
	return buf;
}

void
cli_state_words(const char *state, int position, int exit_code, int signal,
                const char *end_reason, char *buf, size_t len)
{
	if (strcmp(state, "queued") == 0 && position > 0)
		snprintf(buf, len, "queued #%d", position);
	else if (strcmp(state, "exited") == 0 && signal > 0)
		snprintf(buf, len, "exited sig %d", signal);
	else if (strcmp(state, "exited") == 0)
		snprintf(buf, len, "exited %d", exit_code);
	else if (end_reason != NULL && end_reason[0] != '\0' &&
	         strcmp(state, "killed") == 0)
		snprintf(buf, len, "killed (%s)", end_reason);
	else
		snprintf(buf, len, "%s", state);
}
