/*
 * A command line that can be pasted back into a shell: show prints a
 * job's argv with it. Words the shell would read as they are stay bare,
 * others go in single quotes (a ' inside as '\''), as the daemon's
 * status command does. A word holding characters a terminal must not be
 * sent (controls, bidi controls, bytes that are not UTF-8; proto/text.h)
 * is written in the $'...' form with escapes instead, which bash, zsh,
 * ksh and POSIX.1-2024 shells read back as the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "text.h"

/* Append n bytes to the growing string *s (length *len); -1 out of
 * memory. */
static int
put(char **s, size_t *len, const char *p, size_t n)
{
	char *t = realloc(*s, *len + n + 1);

	if (t == NULL)
		return -1;
	memcpy(t + *len, p, n);
	*len += n;
	t[*len] = '\0';
	*s = t;
	return 0;
}

/* One word in $'...': the escaper's text, with its \u{XXXX} spelt as the
 * character's UTF-8 bytes, \xNN each (bash reads \uXXXX only in a UTF-8
 * locale), and ' as \'. */
static int
put_dollar(char **s, size_t *len, const char *esc)
{
	const char *p;
	char hex[16];
	int rc = put(s, len, "$'", 2);

	for (p = esc; rc == 0 && *p != '\0'; p++) {
		if (p[0] == '\\' && p[1] == 'u' && p[2] == '{') {
			char *close;
			unsigned long cp = strtoul(p + 3, &close, 16);
			unsigned char u[4];
			size_t n, k;
			if (*close != '}' || cp > 0x10ffff) {
				rc = put(s, len, "\\\\", 2); /* cannot happen */
				continue;
			}
			if (cp < 0x80) {
				u[0] = (unsigned char)cp;
				n = 1;
			} else if (cp < 0x800) {
				u[0] = (unsigned char)(0xc0 | cp >> 6);
				u[1] = (unsigned char)(0x80 | (cp & 0x3f));
				n = 2;
			} else if (cp < 0x10000) {
				u[0] = (unsigned char)(0xe0 | cp >> 12);
				u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
				u[2] = (unsigned char)(0x80 | (cp & 0x3f));
				n = 3;
			} else {
				u[0] = (unsigned char)(0xf0 | cp >> 18);
				u[1] =
				    (unsigned char)(0x80 | (cp >> 12 & 0x3f));
				u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
				u[3] = (unsigned char)(0x80 | (cp & 0x3f));
				n = 4;
			}
			for (k = 0; rc == 0 && k < n; k++) {
				snprintf(hex, sizeof hex, "\\x%02x", u[k]);
				rc = put(s, len, hex, 4);
			}
			p = close;
		} else if (p[0] == '\\') {
			rc = put(s, len, p, 2); /* \\ \n \r \t \e \xNN */
			p++;
		} else if (p[0] == '\'') {
			rc = put(s, len, "\\'", 2);
		} else {
			rc = put(s, len, p, 1);
		}
	}
	return rc == 0 ? put(s, len, "'", 1) : rc;
}

char *
cli_shell_command(char *const *argv)
{
	char *s = NULL, *esc;
	size_t len = 0, i, nb;
	const char *a;
	int rc = put(&s, &len, "", 0);

	for (i = 0; rc == 0 && argv != NULL && argv[i] != NULL; i++) {
		if (i > 0)
			rc = put(&s, &len, " ", 1);
		if (rc == 0 && proto_shell_plain(argv[i])) {
			rc = put(&s, &len, argv[i], strlen(argv[i]));
			continue;
		}
		if ((esc = cli_safe_dup(argv[i])) == NULL) {
			rc = -1;
			break;
		}
		/* The escaper only lengthens: by one for each backslash, by
		 * more for anything else it escapes. */
		for (nb = 0, a = argv[i]; *a != '\0'; a++)
			nb += *a == '\\';
		if (rc == 0 && strlen(esc) != strlen(argv[i]) + nb) {
			rc = put_dollar(&s, &len, esc);
		} else if (rc == 0) {
			rc = put(&s, &len, "'", 1);
			for (a = argv[i]; rc == 0 && *a != '\0'; a++)
				rc = *a == '\'' ? put(&s, &len, "'\\''", 4)
				                : put(&s, &len, a, 1);
			if (rc == 0)
				rc = put(&s, &len, "'", 1);
		}
		free(esc);
	}
	if (rc != 0) {
		free(s);
		return NULL;
	}
	return s;
}
