/*
 * The helpers of the command line that client/cli-reason.c needs, apart
 * from the rest of cli.c: stageload-web compiles these two files too, so
 * that its page says why a job waits with the same words as `status`,
 * `run` and `show`.
 */
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
