/*
 * Desktop notifications for stageloadctl (wait --notify): one file per OS
 * (desktop-darwin.c, desktop-linux.c), chosen by CMake like doctor-*.c;
 * desktop.c runs the tool they name. docs/cli.md, "wait".
 */
#ifndef SL_DESKTOP_H
#define SL_DESKTOP_H

#include <stddef.h>

/* Post a notification. 0 once the tool ran and exited 0; -ENOENT when
 * there is no tool to post it (cause names what was looked for); another
 * negative errno with a cause when it failed. */
int desktop_notify(const char *title, const char *body, char *cause,
                   size_t causelen);

/* Run argv (found along PATH) with stdin, stdout and stderr on /dev/null,
 * for at most timeout_ms; 0 when it exited 0. -ENOENT when argv[0] is not
 * found, -ETIMEDOUT (it was killed), -EIO (another status). */
int desktop_run(char *const argv[], int timeout_ms);

#endif
