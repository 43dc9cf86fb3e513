/*
 * Running the tool that posts a desktop notification (desktop.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "desktop.h"

int
desktop_run(char *const argv[], int timeout_ms)
{
	struct timespec nap = {0, 20 * 1000 * 1000};
	int status, waited = 0, fd;
	pid_t pid, r;

	if ((pid = fork()) == -1)
		return -errno;
	if (pid == 0) {
		if ((fd = open("/dev/null", O_RDWR)) != -1) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			if (fd > 2)
				close(fd);
		}
		execvp(argv[0], argv);
		_exit(errno == ENOENT ? 127 : 126);
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r == -1 && errno != EINTR)
			return -errno;
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
		waited += 20;
	}
	/* 127: not found (execvp, or a shell the tool ran through). */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return -ENOENT;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}
