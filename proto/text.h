/*
 * Text from users made safe to show: the one escaper of stageload. Every
 * output path that prints text someone else chose (a job's name, argv,
 * environment, directory, end detail, a user or client name; the daemon's
 * log lines; another user's job log) writes it through
 * proto_text_escape(), so no terminal control sequence (ESC, OSC 52, a C1
 * CSI), no bidirectional override and no newline of theirs reaches the
 * reader. docs/cli.md ("Text from other users") documents the format.
 *
 * The format (flags 0):
 *   \\                      a backslash, so the text reads back unambiguously
 *   \n \r \t \e             newline, carriage return, tab, ESC
 *   \xNN                    any other C0 control, DEL, and each byte that is
 *                           not part of well-formed UTF-8 (lower-case hex)
 *   \u{XXXX}                the C1 controls U+0080..U+009F, the bidi
 *                           controls U+061C, U+200E, U+200F, U+202A..U+202E,
 *                           U+2066..U+2069, and the line and paragraph
 *                           separators U+2028, U+2029 (upper-case hex)
 * Everything else (printable ASCII, any other well-formed UTF-8: accents,
 * CJK, emoji) is copied as it is.
 */
#ifndef SL_TEXT_H
#define SL_TEXT_H

#include <stdarg.h>
#include <stddef.h>

/* "\n" and "\t" are copied as they are: multi-line text (a job's log).
 * "\r" is still escaped: it could overwrite what a line showed. */
#define PROTO_TEXT_MULTILINE 0x1u
/* s may stop inside a character (a chunk of a stream): an incomplete but
 * so far well-formed sequence at its end is not consumed, to be passed
 * again with the next chunk. */
#define PROTO_TEXT_PARTIAL 0x2u
/*
 * s is JSON text (as cJSON prints it): the same code points are written
 * as JSON escapes instead ("\u001b", "\u009b", "\u202e"; a byte that is
 * not UTF-8 as "\ufffd"), and backslashes, newlines, tabs and carriage
 * returns are left alone, so the output is still JSON and means the same
 * to a JSON reader.
 */
#define PROTO_TEXT_JSON 0x4u

/* An escape is at most this many bytes per input byte ("\u007f" in JSON
 * mode, "\xNN" otherwise): out of PROTO_TEXT_GROWTH * len + 1 bytes
 * always holds the whole text. */
#define PROTO_TEXT_GROWTH 6

/*
 * Escape s[0..len) into out (outlen bytes; NUL-terminated whenever
 * outlen > 0). With max_chars > 0, stops before the output would pass
 * max_chars characters (code points; each byte of an escape is one), never
 * inside a character or an escape. Returns how many bytes of s were
 * consumed: len, unless out or max_chars ran out first or
 * PROTO_TEXT_PARTIAL left an incomplete tail. *written (may be NULL) gets
 * the bytes written, without the NUL.
 */
size_t proto_text_escape(const char *s, size_t len, unsigned flags,
                         size_t max_chars, char *out, size_t outlen,
                         size_t *written);

/* The whole of s[0..len) escaped, in a malloc'd string (NULL when out of
 * memory); *outlen (may be NULL) gets its length. */
char *proto_text_escape_dup(const char *s, size_t len, unsigned flags,
                            size_t *outlen);

/* fmt and ap formatted into small (size bytes) or, when longer, into a
 * malloc'd buffer; cut to small when that fails. Free the result when it
 * is not small. fmt itself when it cannot be formatted. */
const char *proto_text_vformat(char *small, size_t size, const char *fmt,
                               va_list ap);

/* Is a a word a POSIX shell reads as it is (letters, digits and
 * _@%+=:,./-, not empty)? Anything else is quoted where a command line is
 * shown (the daemon's job command, stageloadctl show). */
int proto_shell_plain(const char *a);

/* fmt formatted into cause (when not NULL and causelen > 0), and rc
 * returned: the one way a function says why it returns an error. */
int proto_cause(char *cause, size_t causelen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
