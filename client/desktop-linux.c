/*
 * Desktop notifications on Linux: notify-send (libnotify), where present.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "desktop.h"

int
desktop_notify(const char *title, const char *body, char *cause,
               size_t causelen)
{
	char *argv[] = {"notify-send", "--app-name=stageload", "--",
	                (char *)title, (char *)body,           NULL};
	int rc = desktop_run(argv, 10000);

	if (rc == -ENOENT)
		snprintf(cause, causelen,
		         "notify-send not found on PATH (Debian and Ubuntu: "
		         "apt-get install libnotify-bin)");
	else if (rc < 0)
		snprintf(cause, causelen, "notify-send failed: %s",
		         strerror(-rc));
	return rc;
}
