/*
 * Desktop notifications on macOS: osascript's display notification. The
 * title and text are the script's arguments, never part of its source, so
 * nothing in them is read as AppleScript.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "desktop.h"

int
desktop_notify(const char *title, const char *body, char *cause,
               size_t causelen)
{
	char *argv[] = {"/usr/bin/osascript",
	                "-e",
	                "on run argv",
	                "-e",
	                "display notification (item 2 of argv) with title "
	                "(item 1 of argv)",
	                "-e",
	                "end run",
	                (char *)title,
	                (char *)body,
	                NULL};
	int rc = desktop_run(argv, 10000);

	if (rc == -ENOENT)
		snprintf(cause, causelen, "/usr/bin/osascript not found");
	else if (rc < 0)
		snprintf(cause, causelen, "osascript failed: %s",
		         strerror(-rc));
	return rc;
}
