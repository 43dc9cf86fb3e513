/* The one escaper for text from users; the format is in text.h. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/*
 * The well-formed UTF-8 sequence at p (n bytes available): its length,
 * with its code point in *cp; 0 when p[0] does not start one (a stray
 * continuation byte, an overlong form, a surrogate, above U+10FFFF); -1
 * when the n bytes are a well-formed start cut short. The rules are those
 * of proto_utf8_valid().
 */
static int
utf8_decode(const unsigned char *p, size_t n, unsigned *cp)
{
	unsigned c = p[0], lo = 0x80, hi = 0xbf;
	int need, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		c &= 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
		c &= 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
		c &= 0x07;
	} else {
		return 0;
	}
	for (i = 1; i <= need; i++) {
		if ((size_t)i >= n)
			return -1;
		if (p[i] < lo || p[i] > hi)
			return 0;
		c = (c << 6) | (p[i] & 0x3fu);
		lo = 0x80;
		hi = 0xbf;
	}
	*cp = c;
	return need + 1;
}

/* Code points that are shown escaped although they are not C0: the C1
 * controls, the bidirectional formatting characters, and the line and
 * paragraph separators. */
static int
cp_hidden(unsigned cp)
{
	return (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
	       cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

/* The escape for cp into esc (at least 16 bytes): its length, or 0 when
 * cp is copied as it is. */
static size_t
escape_cp(unsigned cp, unsigned flags, char *esc)
{
	int n = 0;

	if (flags & PROTO_TEXT_JSON) {
		if ((cp < 0x20 && cp != '\n' && cp != '\t' && cp != '\r') ||
		    cp_hidden(cp))
			n = snprintf(esc, 16, "\\u%04x", cp);
		return n > 0 ? (size_t)n : 0;
	}
	switch (cp) {
	case '\\':
		return (size_t)snprintf(esc, 16, "\\\\");
	case '\n':
		return flags & PROTO_TEXT_MULTILINE
		           ? 0
		           : (size_t)snprintf(esc, 16, "\\n");
	case '\t':
		return flags & PROTO_TEXT_MULTILINE
		           ? 0
		           : (size_t)snprintf(esc, 16, "\\t");
	case '\r':
		return (size_t)snprintf(esc, 16, "\\r");
	case 0x1b:
		return (size_t)snprintf(esc, 16, "\\e");
	}
	if (cp < 0x20 || cp == 0x7f)
		n = snprintf(esc, 16, "\\x%02x", cp);
	else if (cp_hidden(cp))
		n = snprintf(esc, 16, "\\u{%04X}", cp);
	return n > 0 ? (size_t)n : 0;
}

size_t
proto_text_escape(const char *s, size_t len, unsigned flags, size_t max_chars,
                  char *out, size_t outlen, size_t *written)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, chars = 0, n, k, w;
	const char *put;
	char esc[16];
	unsigned cp;
	int r;

	while (i < len) {
		r = utf8_decode(p + i, len - i, &cp);
		if (r < 0 && (flags & PROTO_TEXT_PARTIAL))
			break; /* the rest comes with the next chunk */
		if (r <= 0) {
			/* A byte that is not UTF-8, shown as its value. */
			n = 1;
			if (flags & PROTO_TEXT_JSON)
				k = (size_t)snprintf(esc, sizeof esc,
				                     "\\ufffd");
			else
				k = (size_t)snprintf(esc, sizeof esc, "\\x%02x",
				                     p[i]);
			put = esc;
			w = k;
		} else {
			n = (size_t)r;
			k = escape_cp(cp, flags, esc);
			if (k == 0) {
				put = s + i;
				k = n;
				w = 1;
			} else {
				put = esc;
				w = k;
			}
		}
		if (o + k >= outlen || (max_chars > 0 && chars + w > max_chars))
			break;
		memcpy(out + o, put, k);
		o += k;
		chars += w;
		i += n;
	}
	if (outlen > 0)
		out[o] = '\0';
	if (written != NULL)
		*written = o;
	return i;
}

char *
proto_text_escape_dup(const char *s, size_t len, unsigned flags, size_t *outlen)
{
	size_t cap, n;
	char *out, *shrunk;

	if (len > (SIZE_MAX - 1) / PROTO_TEXT_GROWTH)
		return NULL;
	cap = len * PROTO_TEXT_GROWTH + 1;
	if ((out = malloc(cap)) == NULL)
		return NULL;
	/* Without PARTIAL every byte is consumed: out holds the worst case. */
	proto_text_escape(s, len, flags & ~PROTO_TEXT_PARTIAL, 0, out, cap, &n);
	if (n + 1 < cap && (shrunk = realloc(out, n + 1)) != NULL)
		out = shrunk;
	if (outlen != NULL)
		*outlen = n;
	return out;
}

const char *
proto_text_vformat(char *small, size_t size, const char *fmt, va_list ap)
{
	char *msg;
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(small, size, fmt, ap);
	if (n < 0) {
		va_end(ap2);
		return fmt;
	}
	if ((size_t)n >= size && (msg = malloc((size_t)n + 1)) != NULL) {
		vsnprintf(msg, (size_t)n + 1, fmt, ap2);
		va_end(ap2);
		return msg;
	}
	va_end(ap2);
	return small; /* cut, rather than nothing */
}

int
proto_shell_plain(const char *a)
{
	if (*a == '\0')
		return 0;
	for (; *a != '\0'; a++)
		if (!((*a >= 'a' && *a <= 'z') || (*a >= 'A' && *a <= 'Z') ||
		      (*a >= '0' && *a <= '9') || strchr("_@%+=:,./-", *a)))
			return 0;
	return 1;
}

int
proto_cause(char *cause, size_t causelen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (cause != NULL && causelen > 0) {
		va_start(ap, fmt);
		vsnprintf(cause, causelen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
