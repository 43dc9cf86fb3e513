/*
 * Newline-delimited JSON-RPC 2.0: framing, classification, encoding and
 * typed access to params. proto/PROTOCOL.md is the specification.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* Buffers above this size are released once empty, so one big line does
 * not pin megabytes to an idle connection. */
#define READER_KEEP_BYTES (64u * 1024)
#define READER_MIN_CAP 4096u

/*
 * cJSON stops at a NUL byte, so a "\u0000" escape would silently cut a
 * string short. proto_parse() rewrites each such escape to this byte before
 * parsing: 0xFF never occurs in UTF-8, and the framing layer has already
 * rejected raw 0xFF, so any 0xFF in a decoded string marks a NUL.
 */
#define NUL_MARK '\xff'

void
proto_reader_init(struct proto_reader *r, size_t max_line)
{
	memset(r, 0, sizeof *r);
	r->max_line = max_line != 0 ? max_line : PROTO_MAX_LINE_DEFAULT;
}

void
proto_reader_free(struct proto_reader *r)
{
	free(r->buf);
	free(r->rest);
	r->buf = NULL;
	r->rest = NULL;
	r->len = 0;
	r->cap = 0;
	r->rest_len = 0;
}

size_t
proto_reader_mem(const struct proto_reader *r)
{
	return r->cap + r->rest_len;
}

/* Make room for need bytes (the line so far and its NUL); the caller has
 * checked the line limit, and max_buf, when set, is checked here. */
static int
reader_reserve(struct proto_reader *r, size_t need)
{
	size_t cap;
	char *nbuf;

	if (need <= r->cap)
		return 0;
	if (r->max_buf != 0 && need > r->max_buf)
		return PROTO_READ_LIMIT;
	cap = r->cap != 0 ? r->cap : READER_MIN_CAP;
	while (cap < need)
		cap *= 2;
	/* Never more than the longest legal line plus its terminator (need
	 * is one more only when the line's last byte is a '\r' that the NUL
	 * replaces), nor than the owner lets this reader hold. */
	if (cap > r->max_line + 1)
		cap = r->max_line + 1;
	if (r->max_buf != 0 && cap > r->max_buf)
		cap = r->max_buf;
	nbuf = realloc(r->buf, cap);
	if (nbuf == NULL)
		return -ENOMEM;
	r->buf = nbuf;
	r->cap = cap;
	return 0;
}

/* Hand one complete line (without its '\n') in r->buf to the callback. */
static int
reader_emit(struct proto_reader *r, proto_line_cb cb, void *arg)
{
	size_t len = r->len;
	int rc;

	r->len = 0;
	if (len > 0 && r->buf[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	if (!proto_utf8_valid(r->buf, len))
		return PROTO_FRAME_UTF8;
	r->buf[len] = '\0';
	rc = cb(arg, r->buf, len);
	return rc;
}

/* Keep the bytes after a line whose callback paused the feed. */
static int
reader_keep(struct proto_reader *r, const char *data, size_t len)
{
	if (len == 0)
		return PROTO_READ_PAUSE;
	if ((r->rest = malloc(len)) == NULL)
		return -ENOMEM;
	memcpy(r->rest, data, len);
	r->rest_len = len;
	return PROTO_READ_PAUSE;
}

static int
reader_feed(struct proto_reader *r, const char *data, size_t len,
            proto_line_cb cb, void *arg)
{
	const char *nl;
	size_t take, room;
	int rc;

	while (len > 0) {
		nl = memchr(data, '\n', len);
		take = nl != NULL ? (size_t)(nl - data) : len;
		/*
		 * The limit counts the bytes of the line, not its terminator
		 * ("\n" or "\r\n"), and is checked before the newline has
		 * arrived, so a peer cannot make us buffer an endless line. One
		 * byte more than the limit is held only while it is a '\r' that
		 * may be the first half of the terminator; the buffer never
		 * holds more than max_line + 1 bytes, and the NUL written after
		 * the line takes the place of that '\r' or of the '\n'.
		 */
		room = r->max_line + 1 - r->len;
		if (take > room ||
		    (take == room && take > 0 && data[take - 1] != '\r')) {
			r->err = PROTO_FRAME_TOO_LONG;
			return r->err;
		}
		if ((rc = reader_reserve(r, r->len + take + 1)) != 0) {
			if (rc == PROTO_READ_LIMIT)
				r->err = rc;
			return rc;
		}
		memcpy(r->buf + r->len, data, take);
		r->len += take;
		if (nl == NULL)
			break;
		data += take + 1;
		len -= take + 1;
		if ((rc = reader_emit(r, cb, arg)) != 0) {
			if (rc == PROTO_FRAME_UTF8)
				r->err = rc;
			if (rc == PROTO_READ_PAUSE)
				return reader_keep(r, data, len);
			return rc;
		}
	}
	if (r->len == 0 && r->cap > READER_KEEP_BYTES) {
		free(r->buf);
		r->buf = NULL;
		r->cap = 0;
	}
	return 0;
}

int
proto_reader_feed(struct proto_reader *r, const char *data, size_t len,
                  proto_line_cb cb, void *arg)
{
	char *rest, *grown;
	size_t rest_len;
	int rc;

	if (r->err != 0)
		return r->err;
	if (r->rest == NULL)
		return reader_feed(r, data, len, cb, arg);
	/* What a paused feed kept comes before the new bytes. */
	rest = r->rest;
	rest_len = r->rest_len;
	if (len > 0) {
		if ((grown = realloc(rest, rest_len + len)) == NULL)
			return -ENOMEM;
		memcpy(grown + rest_len, data, len);
		rest = grown;
		rest_len += len;
	}
	r->rest = NULL;
	r->rest_len = 0;
	rc = reader_feed(r, rest, rest_len, cb, arg);
	free(rest);
	return rc;
}

/*
 * Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0
 * when there is none. Follows the table of well-formed byte sequences in
 * Unicode 15, section 3.9 (D92), which excludes overlongs, surrogates and
 * code points above U+10FFFF.
 */
static size_t
utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t need, i;

	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return 0;
	if (c < 0xE0) {
		need = 2;
	} else if (c < 0xF0) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c < 0xF5) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < need; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return need;
}

int
proto_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		/* Fast path: runs of ASCII, the common case on the wire. */
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_seq_len(p + i, len - i);
		if (n == 0)
			return 0;
		i += n;
	}
	return 1;
}

char *
proto_utf8_sanitize(const char *s, size_t len, size_t *outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, n;
	char *out;

	/* Every bad byte becomes 3 bytes of U+FFFD at most. */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	if ((out = malloc(len * 3 + 1)) == NULL)
		return NULL;
	while (i < len) {
		n = utf8_seq_len(p + i, len - i);
		if (n == 0) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	if (outlen != NULL)
		*outlen = o;
	return out;
}

/* 1 when the JSON text holds a "\u0000" escape. Backslashes only occur
 * inside strings in valid JSON, so no string tracking is needed. */
static int
has_nul_escape(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 6 <= len &&
		    memcmp(s + i + 2, "0000", 4) == 0)
			return 1;
		i++; /* skip the escaped character, e.g. the second '\' */
	}
	return 0;
}

/* A copy of the line with every "\u0000" escape replaced by NUL_MARK. */
static char *
mark_nul_escapes(const char *s, size_t len, size_t *outlen)
{
	char *out;
	size_t i, o = 0;

	if ((out = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len) {
			if (s[i + 1] == 'u' && i + 6 <= len &&
			    memcmp(s + i + 2, "0000", 4) == 0) {
				out[o++] = NUL_MARK;
				i += 5;
				continue;
			}
			out[o++] = s[i++];
		}
		out[o++] = s[i];
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* A decoded string is fit for use: valid UTF-8, and no NUL (see NUL_MARK). */
static int
string_clean(const char *s)
{
	size_t len = strlen(s);

	return memchr(s, NUL_MARK, len) == NULL && proto_utf8_valid(s, len);
}

/* An integral JSON number within +-2^53. */
static int
number_is_int(const cJSON *item)
{
	double d;

	if (!cJSON_IsNumber(item))
		return 0;
	d = item->valuedouble;
	/* The cast is defined only in range, so the range comes first. */
	return d >= -PROTO_MAX_SAFE_INT && d <= PROTO_MAX_SAFE_INT &&
	       d == (double)(int64_t)d;
}

/*
 * The text of a request's id, so that a reply can carry it byte for byte
 * (JSON-RPC echoes the id; cJSON would print -1.0 as -1 and 1e2 as 100).
 * The text is the one cJSON parsed, so only the members before the id need
 * skipping: cJSON keeps an object's members in order, and, like cJSON, any
 * byte up to ' ' counts as white space.
 */
static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (unsigned char)*p <= ' ')
		p++;
	return p;
}

/* p is at a '"'; returns the byte after the closing one. */
static const char *
skip_string(const char *p, const char *end)
{
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\')
			p++;
	return p < end ? p + 1 : end;
}

static const char *
skip_value(const char *p, const char *end)
{
	int depth = 0;

	if (p < end && *p == '"')
		return skip_string(p, end);
	if (p < end && (*p == '{' || *p == '[')) {
		while (p < end) {
			if (*p == '"') {
				p = skip_string(p, end);
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if ((*p == '}' || *p == ']') && --depth == 0)
				return p + 1;
			p++;
		}
		return end;
	}
	while (p < end && *p != ',' && *p != '}' && *p != ']' &&
	       (unsigned char)*p > ' ')
		p++;
	return p;
}

/* The text of the index-th member's value of the object in text; 0, or -1
 * when the text does not read as expected. */
static int
member_text(const char *text, size_t len, size_t index, const char **start,
            size_t *n)
{
	const char *p = text, *end = text + len, *v;
	size_t k;

	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3; /* cJSON skips a byte order mark */
	p = skip_ws(p, end);
	if (p == end || *p++ != '{')
		return -1;
	for (k = 0;; k++) {
		p = skip_ws(p, end);
		if (p == end || *p != '"')
			return -1;
		p = skip_ws(skip_string(p, end), end);
		if (p == end || *p++ != ':')
			return -1;
		v = skip_ws(p, end);
		p = skip_value(v, end);
		if (k == index) {
			*start = v;
			*n = (size_t)(p - v);
			return *n > 0 ? 0 : -1;
		}
		p = skip_ws(p, end);
		if (p == end || *p++ != ',')
			return -1;
	}
}

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* s[0..n) is a number as JSON spells it (cJSON also takes "01", "-01",
 * "1." and "1.e5"; a reply must not carry those back). */
static int
json_number_text(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && is_digit(s[i]))
			i++;
	else
		return 0;
	if (i < n && s[i] == '.') {
		if (++i == n || !is_digit(s[i]))
			return 0;
		while (i < n && is_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i == n || !is_digit(s[i]))
			return 0;
		while (i < n && is_digit(s[i]))
			i++;
	}
	return i == n;
}

/*
 * Turn the id (a number, or a clean string) into a raw node holding its
 * text as sent. 0, PROTO_E_INVALID_REQUEST when that text is not strict
 * JSON (a number cJSON alone takes, a string with a raw control byte), or
 * PROTO_E_INTERNAL when out of memory.
 */
static int
id_make_raw(cJSON *root, cJSON *id, const char *text, size_t len)
{
	const char *start;
	size_t index = 0, n, i;
	cJSON *it;
	char *raw;

	for (it = root->child; it != NULL && it != id; it = it->next)
		index++;
	if (it == NULL || member_text(text, len, index, &start, &n) != 0)
		return PROTO_E_INVALID_REQUEST;
	if (cJSON_IsNumber(id)) {
		if (!json_number_text(start, n))
			return PROTO_E_INVALID_REQUEST;
	} else {
		if (n < 2 || start[0] != '"' || start[n - 1] != '"')
			return PROTO_E_INVALID_REQUEST;
		for (i = 0; i < n; i++)
			if ((unsigned char)start[i] < ' ')
				return PROTO_E_INVALID_REQUEST;
		/* The text is the parser's copy, where "\u0000" became
		 * NUL_MARK: cJSON may take that byte into a malformed escape
		 * ("\u00\u0000") and not show it in the decoded string, but
		 * the reply would echo it. */
		if (memchr(start, NUL_MARK, n) != NULL ||
		    !proto_utf8_valid(start, n))
			return PROTO_E_INVALID_REQUEST;
	}
	if ((raw = malloc(n + 1)) == NULL)
		return PROTO_E_INTERNAL;
	memcpy(raw, start, n);
	raw[n] = '\0';
	if (!(id->type & cJSON_IsReference))
		free(id->valuestring);
	id->valuestring = raw;
	id->type = cJSON_Raw;
	return 0;
}

int
proto_id_int(const cJSON *id, int64_t *out)
{
	cJSON *n;
	int rc = -1;

	if (number_is_int(id)) {
		*out = (int64_t)id->valuedouble;
		return 0;
	}
	if (!cJSON_IsRaw(id) || id->valuestring == NULL ||
	    !json_number_text(id->valuestring, strlen(id->valuestring)))
		return -1;
	/* Read as cJSON reads numbers (whatever the locale's decimal
	 * point), so 7.0 and 7e0 are the 7 they would be in a request. */
	if ((n = cJSON_Parse(id->valuestring)) != NULL && number_is_int(n)) {
		*out = (int64_t)n->valuedouble;
		rc = 0;
	}
	cJSON_Delete(n);
	return rc;
}

static const char *const request_members[] = {"jsonrpc", "id", "method",
                                              "params", NULL};
static const char *const message_members[] = {
    "jsonrpc", "id", "method", "params", "result", "error", NULL};

static int
name_in(const char *name, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(name, *list) == 0)
			return 1;
	return 0;
}

/* Classify an already parsed top-level value; see PROTOCOL.md. */
static int
parse_classify(struct proto_msg *m, const char *text, size_t len,
               const char **cause)
{
	const cJSON *root = m->root, *v, *it, *method;
	cJSON *id;
	size_t i, n;
	int has_id, rc;

	if (cJSON_IsArray(root)) {
		*cause = "batch requests are not supported";
		return PROTO_E_INVALID_REQUEST;
	}
	if (!cJSON_IsObject(root)) {
		*cause = "a message must be a JSON object";
		return PROTO_E_INVALID_REQUEST;
	}

	/* Read the id first, so that every later error can carry it: as the
	 * text it was sent as, which a reply echoes. */
	id = cJSON_GetObjectItemCaseSensitive(root, "id");
	has_id = id != NULL;
	if (id != NULL && !cJSON_IsNull(id)) {
		if (!cJSON_IsNumber(id) &&
		    !(cJSON_IsString(id) && string_clean(id->valuestring)))
			rc = PROTO_E_INVALID_REQUEST;
		else
			rc = id_make_raw(m->root, id, text, len);
		if (rc == PROTO_E_INTERNAL) {
			*cause = "out of memory";
			return rc;
		}
		if (rc != 0) {
			*cause = "id must be a number, a string or null";
			return rc;
		}
	}
	m->id = id;

	/* A duplicate member would make the meaning depend on the reader.
	 * Only the members we read matter, which keeps this linear. */
	for (i = 0; message_members[i] != NULL; i++) {
		n = 0;
		for (it = root->child; it != NULL; it = it->next)
			if (strcmp(it->string, message_members[i]) == 0)
				n++;
		if (n > 1) {
			*cause = "duplicate member in message";
			return PROTO_E_INVALID_REQUEST;
		}
	}

	v = cJSON_GetObjectItemCaseSensitive(root, "jsonrpc");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0) {
		*cause = "jsonrpc must be \"2.0\"";
		return PROTO_E_INVALID_REQUEST;
	}

	method = cJSON_GetObjectItemCaseSensitive(root, "method");
	if (method != NULL) {
		if (!cJSON_IsString(method) || method->valuestring[0] == '\0' ||
		    !string_clean(method->valuestring)) {
			*cause = "method must be a non-empty string";
			return PROTO_E_INVALID_REQUEST;
		}
		v = cJSON_GetObjectItemCaseSensitive(root, "params");
		if (v != NULL && !cJSON_IsObject(v)) {
			*cause = "params must be an object";
			return PROTO_E_INVALID_REQUEST;
		}
		m->method = method->valuestring;
		m->params = v;
		m->kind = has_id ? PROTO_REQUEST : PROTO_NOTIFICATION;
		/* Requests, notifications too, are strict so that a misspelt
		 * "params" (or "id", which would make a request a notification
		 * that gets no answer) is not silently taken as absent. */
		for (it = root->child; it != NULL; it = it->next)
			if (!name_in(it->string, request_members)) {
				*cause = "unknown member in request";
				return PROTO_E_INVALID_REQUEST;
			}
		return 0;
	}

	m->result = cJSON_GetObjectItemCaseSensitive(root, "result");
	m->error = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (m->result == NULL && m->error == NULL) {
		*cause = "a message needs method, result or error";
		return PROTO_E_INVALID_REQUEST;
	}
	if (!has_id) {
		*cause = "a response needs an id";
		return PROTO_E_INVALID_REQUEST;
	}
	if (m->result != NULL && m->error != NULL) {
		*cause = "a response has result or error, not both";
		return PROTO_E_INVALID_REQUEST;
	}
	if (m->error != NULL) {
		v = cJSON_GetObjectItemCaseSensitive(m->error, "message");
		if (!cJSON_IsObject(m->error) ||
		    !number_is_int(
		        cJSON_GetObjectItemCaseSensitive(m->error, "code")) ||
		    !cJSON_IsString(v) || !string_clean(v->valuestring)) {
			*cause =
			    "error must be an object with code and message";
			return PROTO_E_INVALID_REQUEST;
		}
	}
	m->kind = PROTO_RESPONSE;
	return 0;
}

int
proto_parse(const char *line, size_t len, struct proto_msg *m,
            const char **cause)
{
	const char *text = line, *end = NULL;
	char *copy = NULL;
	size_t textlen = len;
	int rc;

	memset(m, 0, sizeof *m);
	if (memchr(line, '\0', len) != NULL) {
		*cause = "NUL byte in message";
		return PROTO_E_PARSE;
	}
	/* The reader has checked this already; direct callers may not have,
	 * and NUL_MARK relies on it. */
	if (!proto_utf8_valid(line, len)) {
		*cause = "message is not valid UTF-8";
		return PROTO_E_PARSE;
	}
	if (has_nul_escape(line, len)) {
		if ((copy = mark_nul_escapes(line, len, &textlen)) == NULL) {
			*cause = "out of memory";
			return PROTO_E_INTERNAL;
		}
		text = copy;
	}
	m->root = cJSON_ParseWithLengthOpts(text, textlen, &end, 0);
	if (m->root != NULL) {
		/* Only whitespace may follow the value. */
		while (end < text + textlen && (*end == ' ' || *end == '\t' ||
		                                *end == '\r' || *end == '\n'))
			end++;
		if (end != text + textlen) {
			cJSON_Delete(m->root);
			m->root = NULL;
		}
	}
	if (m->root == NULL) {
		free(copy);
		*cause = "message is not valid JSON";
		return PROTO_E_PARSE;
	}
	rc = parse_classify(m, text, textlen, cause);
	free(copy);
	if (rc != 0) {
		/* Keep root (m->id may point into it); only the id survives. */
		m->method = NULL;
		m->params = m->result = m->error = NULL;
	}
	return rc;
}

void
proto_msg_free(struct proto_msg *m)
{
	cJSON_Delete(m->root);
	memset(m, 0, sizeof *m);
}

/* Print compactly and append the newline that ends a message. */
static char *
encode_line(cJSON *msg, size_t *len)
{
	char *text, *line;
	size_t n;

	if (msg == NULL)
		return NULL;
	text = cJSON_PrintUnformatted(msg);
	cJSON_Delete(msg);
	if (text == NULL)
		return NULL;
	n = strlen(text);
	/*
	 * cJSON copies string bytes as they are. Should a string that was
	 * never validated reach an encoder, the peer would see a framing
	 * violation; replacing the bad bytes (they can only be inside string
	 * literals) keeps the line valid JSON and valid UTF-8.
	 */
	if (!proto_utf8_valid(text, n)) {
		line = proto_utf8_sanitize(text, n, &n);
		free(text);
		if ((text = line) == NULL)
			return NULL;
	}
	if ((line = realloc(text, n + 2)) == NULL) {
		free(text);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	if (len != NULL)
		*len = n + 1;
	return line;
}

/*
 * The id of a reply: the request's, as it was sent. An id from proto_parse
 * is a raw node with the text the peer sent, copied byte for byte. An id
 * built here (a number node) is printed by proto_int_create when integral,
 * since cJSON would print 9007199254740991 as 9.00719925474099e+15, which
 * matches no request.
 */
static cJSON *
id_echo(const cJSON *id)
{
	if (id == NULL)
		return cJSON_CreateNull();
	if (cJSON_IsRaw(id))
		return cJSON_CreateRaw(id->valuestring);
	if (number_is_int(id))
		return proto_int_create((int64_t)id->valuedouble);
	return cJSON_Duplicate(id, 1);
}

/* {"jsonrpc":"2.0"} plus an id (the request's, or null). */
static cJSON *
envelope(const cJSON *id, int with_id)
{
	cJSON *msg, *idcopy;

	if ((msg = cJSON_CreateObject()) == NULL)
		return NULL;
	if (cJSON_AddStringToObject(msg, "jsonrpc", "2.0") == NULL)
		goto fail;
	if (!with_id)
		return msg;
	idcopy = id_echo(id);
	if (idcopy == NULL)
		goto fail;
	cJSON_AddItemToObject(msg, "id", idcopy);
	return msg;
fail:
	cJSON_Delete(msg);
	return NULL;
}

/* Attach item under name, or drop both on failure. */
static cJSON *
attach(cJSON *msg, const char *name, cJSON *item)
{
	if (msg == NULL || item == NULL) {
		cJSON_Delete(msg);
		cJSON_Delete(item);
		return NULL;
	}
	cJSON_AddItemToObject(msg, name, item);
	return msg;
}

char *
proto_encode_request(int64_t id, const char *method, cJSON *params, size_t *len)
{
	cJSON *msg;

	if ((msg = envelope(NULL, 0)) == NULL ||
	    proto_add_int(msg, "id", id) == NULL ||
	    cJSON_AddStringToObject(msg, "method", method) == NULL) {
		cJSON_Delete(msg);
		cJSON_Delete(params);
		return NULL;
	}
	if (params != NULL && (msg = attach(msg, "params", params)) == NULL)
		return NULL;
	return encode_line(msg, len);
}

char *
proto_encode_result(const cJSON *id, cJSON *result, size_t *len)
{
	cJSON *msg = envelope(id, 1);

	if (result == NULL && (result = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(msg);
		return NULL;
	}
	return encode_line(attach(msg, "result", result), len);
}

char *
proto_encode_result_head(const cJSON *id, size_t *len)
{
	char *line;

	/* The whole envelope around a placeholder, cut before it: the
	 * encoder writes "result" last. */
	if ((line = proto_encode_result(id, cJSON_CreateRaw("0"), len)) ==
	        NULL ||
	    *len < 4 || strcmp(line + *len - 3, "0}\n") != 0) {
		free(line);
		return NULL;
	}
	*len -= 3;
	line[*len] = '\0';
	return line;
}

char *
proto_encode_error_data(const cJSON *id, int code, const char *message,
                        cJSON *data, size_t *len)
{
	cJSON *msg = envelope(id, 1), *err = cJSON_CreateObject();
	char *clean;

	/* Messages often quote what the peer sent; keep the line UTF-8. */
	clean = proto_utf8_sanitize(message, strlen(message), NULL);
	if (msg == NULL || err == NULL || clean == NULL ||
	    cJSON_AddNumberToObject(err, "code", code) == NULL ||
	    cJSON_AddStringToObject(err, "message", clean) == NULL) {
		free(clean);
		cJSON_Delete(msg);
		cJSON_Delete(err);
		cJSON_Delete(data);
		return NULL;
	}
	free(clean);
	if (data != NULL && (err = attach(err, "data", data)) == NULL) {
		cJSON_Delete(msg);
		return NULL;
	}
	return encode_line(attach(msg, "error", err), len);
}

char *
proto_encode_error(const cJSON *id, int code, const char *message, size_t *len)
{
	return proto_encode_error_data(id, code, message, NULL, len);
}

char *
proto_encode_notification(const char *method, cJSON *params, size_t *len)
{
	cJSON *msg = envelope(NULL, 0);

	if (msg == NULL ||
	    cJSON_AddStringToObject(msg, "method", method) == NULL) {
		cJSON_Delete(msg);
		cJSON_Delete(params);
		return NULL;
	}
	if (params != NULL && (msg = attach(msg, "params", params)) == NULL)
		return NULL;
	return encode_line(msg, len);
}

/*
 * cJSON prints a number that is not an int with "%1.15g" and accepts the
 * result when it reads back within a relative DBL_EPSILON, so 2^53 comes out
 * as 9.00719925474099e+15 (2 less) and 10^15 as 1e+15. Below 10^15 "%1.15g"
 * prints every digit of an integer; from there on the digits are printed
 * by us into a raw node.
 */
#define CJSON_EXACT_LIMIT 1e15

cJSON *
proto_int_create(int64_t v)
{
	char digits[24];

	if ((double)v > -CJSON_EXACT_LIMIT && (double)v < CJSON_EXACT_LIMIT)
		return cJSON_CreateNumber((double)v);
	snprintf(digits, sizeof digits, "%" PRId64, v);
	return cJSON_CreateRaw(digits);
}

/* The decimal digits of v into buf (at least 21 bytes). */
static void
int_digits(int64_t v, char *buf)
{
	char tmp[24];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		buf[i++] = '-';
	while (n > 0)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
}

/* Integral numbers become their digits, so a tree parsed from the wire
 * prints the integers it was given: cJSON would print those past 10^15
 * inexactly, and every one through its "%1.15g", read back with sscanf,
 * which was much of the time a client spent printing a long status. */
static void
exact_ints(cJSON *item)
{
	double v = item->valuedouble;
	char digits[24], *dup;
	cJSON *c;

	/* -0 stays cJSON's ("-0"), as it printed it before. */
	if (cJSON_IsNumber(item) && v <= PROTO_MAX_SAFE_INT &&
	    v >= -PROTO_MAX_SAFE_INT && (double)(int64_t)v == v &&
	    !(v == 0 && signbit(v))) {
		int_digits((int64_t)v, digits);
		if ((dup = strdup(digits)) != NULL) {
			item->type = cJSON_Raw;
			item->valuestring = dup;
		}
	}
	for (c = item->child; c != NULL; c = c->next)
		exact_ints(c);
}

char *
proto_print(const cJSON *item, int formatted)
{
	cJSON *copy;
	char *out;

	/* A copy: the caller's tree keeps its numbers for reading. */
	if (item == NULL || (copy = cJSON_Duplicate(item, 1)) == NULL)
		return NULL;
	exact_ints(copy);
	out = formatted ? cJSON_Print(copy) : cJSON_PrintUnformatted(copy);
	cJSON_Delete(copy);
	return out;
}

cJSON *
proto_add_int(cJSON *obj, const char *name, int64_t v)
{
	cJSON *item = proto_int_create(v);

	if (item == NULL)
		return NULL;
	if (!cJSON_AddItemToObject(obj, name, item)) {
		cJSON_Delete(item);
		return NULL;
	}
	return item;
}

/*
 * Copy a name the peer chose into a cause: bounded, and UTF-8 even when it
 * holds NUL_MARK, so an error message can always be encoded.
 */
static const char *
quote_name(const char *name, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t i = 0, o = 0, n;

	while (p[i] != '\0' && o + 5 < len && o < 64) {
		/* 4 is enough: the check stops at the first non-continuation
		 * byte, so it never reads past the NUL. */
		n = utf8_seq_len(p + i, 4);
		if (n == 0) {
			buf[o++] = '?';
			i++;
			continue;
		}
		if (o + n + 4 >= len)
			break;
		memcpy(buf + o, p + i, n);
		o += n;
		i += n;
	}
	if (p[i] != '\0') {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static int
param_error(char *cause, size_t causelen, const char *name, const char *what)
{
	char q[80];

	if (cause != NULL && causelen > 0)
		snprintf(cause, causelen, "invalid params: '%s' %s",
		         quote_name(name, q, sizeof q), what);
	return PROTO_E_PARAMS;
}

/*
 * Look up name in params. Returns 0 with *item set, 1 when absent (JSON
 * null counts as absent) and not required, or PROTO_E_PARAMS.
 */
static int
param_find(const cJSON *params, const char *name, int required,
           const cJSON **item, char *cause, size_t causelen)
{
	const cJSON *v = NULL;

	if (params != NULL && !cJSON_IsObject(params)) {
		if (cause != NULL && causelen > 0)
			snprintf(cause, causelen,
			         "invalid params: params must be an object");
		return PROTO_E_PARAMS;
	}
	if (params != NULL)
		v = cJSON_GetObjectItemCaseSensitive(params, name);
	if (v == NULL || cJSON_IsNull(v)) {
		if (required)
			return param_error(cause, causelen, name,
			                   "is required");
		return 1;
	}
	*item = v;
	return 0;
}

int
proto_param_int(const cJSON *params, const char *name, int required,
                int64_t min, int64_t max, int64_t *out, char *cause,
                size_t causelen)
{
	const cJSON *v;
	char what[96];
	double d;
	int rc;

	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc;
	if (!cJSON_IsNumber(v))
		return param_error(cause, causelen, name, "must be an integer");
	/* valueint saturates at INT_MAX; the double is the value sent. */
	d = v->valuedouble;
	if (!isfinite(d))
		return param_error(cause, causelen, name, "must be an integer");
	if (d < (double)min || d > (double)max || d > PROTO_MAX_SAFE_INT ||
	    d < -PROTO_MAX_SAFE_INT) {
		if (min <= (int64_t)-PROTO_MAX_SAFE_INT)
			min = (int64_t)-PROTO_MAX_SAFE_INT;
		if (max >= (int64_t)PROTO_MAX_SAFE_INT)
			max = (int64_t)PROTO_MAX_SAFE_INT;
		snprintf(what, sizeof what,
		         "must be between %" PRId64 " and %" PRId64, min, max);
		return param_error(cause, causelen, name, what);
	}
	/* In range now, so the cast is defined. */
	if (d != (double)(int64_t)d)
		return param_error(cause, causelen, name, "must be an integer");
	*out = (int64_t)d;
	return 0;
}

int
proto_param_double(const cJSON *params, const char *name, int required,
                   double min, double max, double *out, char *cause,
                   size_t causelen)
{
	const cJSON *v;
	char what[96];
	int rc;

	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return param_error(cause, causelen, name, "must be a number");
	if (v->valuedouble < min || v->valuedouble > max) {
		snprintf(what, sizeof what, "must be between %g and %g", min,
		         max);
		return param_error(cause, causelen, name, what);
	}
	*out = v->valuedouble;
	return 0;
}

int
proto_param_bool(const cJSON *params, const char *name, int required, int *out,
                 char *cause, size_t causelen)
{
	const cJSON *v;
	int rc;

	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc;
	if (!cJSON_IsBool(v))
		return param_error(cause, causelen, name,
		                   "must be true or false");
	*out = cJSON_IsTrue(v);
	return 0;
}

/* Check one decoded string; 0 or PROTO_E_PARAMS naming the parameter. */
static int
string_check(const char *s, const char *name, size_t max_len, char *cause,
             size_t causelen)
{
	char what[64];
	size_t len = strlen(s);

	if (memchr(s, NUL_MARK, len) != NULL)
		return param_error(cause, causelen, name,
		                   "must not contain NUL");
	if (!proto_utf8_valid(s, len))
		return param_error(cause, causelen, name,
		                   "must be valid UTF-8");
	if (max_len != 0 && len > max_len) {
		snprintf(what, sizeof what, "is longer than %zu bytes",
		         max_len);
		return param_error(cause, causelen, name, what);
	}
	return 0;
}

int
proto_param_string(const cJSON *params, const char *name, int required,
                   size_t max_len, const char **out, char *cause,
                   size_t causelen)
{
	const cJSON *v;
	int rc;

	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc;
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return param_error(cause, causelen, name, "must be a string");
	if ((rc = string_check(v->valuestring, name, max_len, cause,
	                       causelen)) != 0)
		return rc;
	*out = v->valuestring;
	return 0;
}

int
proto_param_strv(const cJSON *params, const char *name, int required,
                 size_t max_items, size_t total_max, const char ***out,
                 char *cause, size_t causelen)
{
	const cJSON *v, *it;
	const char **vec;
	char what[80];
	size_t n = 0, total = 0, i = 0;
	int rc;

	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc;
	if (!cJSON_IsArray(v))
		return param_error(cause, causelen, name,
		                   "must be an array of strings");
	for (it = v->child; it != NULL; it = it->next) {
		if (!cJSON_IsString(it) || it->valuestring == NULL)
			return param_error(cause, causelen, name,
			                   "must be an array of strings");
		if ((rc = string_check(it->valuestring, name, 0, cause,
		                       causelen)) != 0)
			return rc;
		n++;
		total += strlen(it->valuestring);
		if (max_items != 0 && n > max_items) {
			snprintf(what, sizeof what, "has more than %zu items",
			         max_items);
			return param_error(cause, causelen, name, what);
		}
		if (total_max != 0 && total > total_max) {
			snprintf(what, sizeof what,
			         "is longer than %zu bytes in all", total_max);
			return param_error(cause, causelen, name, what);
		}
	}
	if ((vec = calloc(n + 1, sizeof *vec)) == NULL) {
		if (cause != NULL && causelen > 0)
			snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	for (it = v->child; it != NULL; it = it->next)
		vec[i++] = it->valuestring;
	vec[i] = NULL;
	*out = vec;
	return 0;
}

int
proto_param_intv(const cJSON *params, const char *name, int required,
                 size_t max_items, int64_t min, int64_t max, int64_t **out,
                 size_t *n, char *cause, size_t causelen)
{
	const cJSON *v, *it;
	char what[96];
	int64_t *vec;
	size_t count = 0, i = 0;
	double d;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc;
	if (!cJSON_IsArray(v))
		return param_error(cause, causelen, name,
		                   "must be an array of integers");
	for (it = v->child; it != NULL; it = it->next)
		count++;
	if (max_items != 0 && count > max_items) {
		snprintf(what, sizeof what, "has more than %zu items",
		         max_items);
		return param_error(cause, causelen, name, what);
	}
	if (count == 0)
		return 0;
	if ((vec = malloc(count * sizeof *vec)) == NULL) {
		if (cause != NULL && causelen > 0)
			snprintf(cause, causelen, "out of memory");
		return PROTO_E_INTERNAL;
	}
	for (it = v->child; it != NULL; it = it->next) {
		d = it->valuedouble;
		if (!cJSON_IsNumber(it) || !isfinite(d) || d < (double)min ||
		    d > (double)max || d > PROTO_MAX_SAFE_INT ||
		    d < -PROTO_MAX_SAFE_INT || d != (double)(int64_t)d) {
			free(vec);
			snprintf(what, sizeof what,
			         "must be an array of integers between %" PRId64
			         " and %" PRId64,
			         min, max);
			return param_error(cause, causelen, name, what);
		}
		vec[i++] = (int64_t)d;
	}
	*out = vec;
	*n = count;
	return 0;
}

int
proto_param_type(const cJSON *params, const char *name, enum proto_type t,
                 int required, char *cause, size_t causelen)
{
	const cJSON *v, *it;
	int rc;

	if ((rc = param_find(params, name, required, &v, cause, causelen)) != 0)
		return rc < 0 ? rc : 0;
	switch (t) {
	case PROTO_T_INT:
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
			return param_error(cause, causelen, name,
			                   "must be an integer");
		break;
	case PROTO_T_NUMBER:
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
			return param_error(cause, causelen, name,
			                   "must be a number");
		break;
	case PROTO_T_BOOL:
		if (!cJSON_IsBool(v))
			return param_error(cause, causelen, name,
			                   "must be true or false");
		break;
	case PROTO_T_STRING:
		if (!cJSON_IsString(v) || v->valuestring == NULL)
			return param_error(cause, causelen, name,
			                   "must be a string");
		break;
	case PROTO_T_STRV:
		if (!cJSON_IsArray(v))
			return param_error(cause, causelen, name,
			                   "must be an array of strings");
		for (it = v->child; it != NULL; it = it->next)
			if (!cJSON_IsString(it) || it->valuestring == NULL)
				return param_error(
				    cause, causelen, name,
				    "must be an array of strings");
		break;
	case PROTO_T_INTV:
		if (!cJSON_IsArray(v))
			return param_error(cause, causelen, name,
			                   "must be an array of integers");
		for (it = v->child; it != NULL; it = it->next)
			if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
				return param_error(
				    cause, causelen, name,
				    "must be an array of integers");
		break;
	case PROTO_T_ID:
		if (!(cJSON_IsNumber(v) && isfinite(v->valuedouble)) &&
		    !(cJSON_IsString(v) && v->valuestring != NULL))
			return param_error(cause, causelen, name,
			                   "must be a job id (an integer, or a "
			                   "string: \"42\", \"A42\", "
			                   "\"A42_3\")");
		break;
	case PROTO_T_IDV:
		if (!cJSON_IsArray(v))
			return param_error(cause, causelen, name,
			                   "must be an array of job ids");
		for (it = v->child; it != NULL; it = it->next)
			if (!(cJSON_IsNumber(it) &&
			      isfinite(it->valuedouble)) &&
			    !(cJSON_IsString(it) && it->valuestring != NULL))
				return param_error(
				    cause, causelen, name,
				    "must be an array of job ids (integers, "
				    "or strings: \"42\", \"A42\", "
				    "\"A42_3\")");
		break;
	}
	return 0;
}

int
proto_params_check(const cJSON *params, const char *const *known, char *cause,
                   size_t causelen)
{
	const cJSON *it, *prev;

	if (params == NULL)
		return 0;
	if (!cJSON_IsObject(params)) {
		if (cause != NULL && causelen > 0)
			snprintf(cause, causelen,
			         "invalid params: params must be an object");
		return PROTO_E_PARAMS;
	}
	for (it = params->child; it != NULL; it = it->next) {
		if (!name_in(it->string, known))
			return param_error(cause, causelen, it->string,
			                   "is not a known parameter");
		/* Earlier members are distinct known names, so this scan
		 * is bounded by the number of known names. */
		for (prev = params->child; prev != it; prev = prev->next)
			if (strcmp(prev->string, it->string) == 0)
				return param_error(cause, causelen, it->string,
				                   "is given twice");
	}
	return 0;
}
