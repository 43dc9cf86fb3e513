/*
 * libFuzzer target for the protocol decoder: bytes go through the line
 * reader (whole and in pieces, which must agree), every line through
 * proto_parse, every parameter through the typed getters and the unit
 * parsers, and every reply we would send is parsed back.
 *
 * Input layout: byte 0 picks the maximum line size, byte 1 the chunk size
 * of the second pass; the rest is the stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stop the process on a broken invariant so the fuzzer records it. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
			        __LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

struct pass {
	uint64_t hash; /* of every line delivered, in order */
	size_t lines;
	int check; /* run the full checks on each line */
};

static const char *const known[] = {
    "version", "client",   "argv", "cwd",      "env",      "id",
    "pid",     "since_ms", "name", "priority", "attached", NULL};

/* Every reply we send must be one line that parses back as a response,
 * carrying the request's id byte for byte (id: as proto_parse left it). */
static void
check_reply_id(char *line, size_t len, const cJSON *id)
{
	struct proto_msg m;
	const char *cause;

	if (line == NULL)
		return; /* out of memory only */
	CHECK(len > 0 && line[len - 1] == '\n');
	CHECK(memchr(line, '\n', len - 1) == NULL);
	CHECK(proto_utf8_valid(line, len));
	CHECK(proto_parse(line, len - 1, &m, &cause) == 0);
	CHECK(m.kind == PROTO_RESPONSE);
	if (id != NULL && cJSON_IsRaw(id)) {
		CHECK(cJSON_IsRaw(m.id));
		CHECK(strcmp(m.id->valuestring, id->valuestring) == 0);
	} else {
		CHECK(cJSON_IsNull(m.id));
	}
	proto_msg_free(&m);
	free(line);
}

/* Forwarding a message as a notification keeps method and params. */
static void
check_notification(const struct proto_msg *in)
{
	cJSON *copy =
	    in->params != NULL ? cJSON_Duplicate(in->params, 1) : NULL;
	struct proto_msg m;
	const char *cause;
	size_t len = 0;
	char *line;

	line = proto_encode_notification(in->method, copy, &len);
	if (line == NULL)
		return;
	CHECK(len > 0 && line[len - 1] == '\n');
	CHECK(proto_utf8_valid(line, len));
	CHECK(proto_parse(line, len - 1, &m, &cause) == 0);
	CHECK(m.kind == PROTO_NOTIFICATION);
	CHECK(strcmp(m.method, in->method) == 0);
	CHECK((m.params == NULL) == (in->params == NULL));
	proto_msg_free(&m);
	free(line);
}

static void
check_units(const char *s)
{
	char buf[32];
	uint64_t bytes, back;
	int64_t ms, ms2;

	if (units_parse_size(s, &bytes) == 0) {
		CHECK(bytes <= (1ull << 53));
		units_format_size(bytes, buf, sizeof buf);
		CHECK(units_parse_size(buf, &back) == 0);
	}
	if (units_parse_duration_ms(s, &ms) == 0) {
		CHECK(ms >= 0 && ms <= (1ll << 53));
		units_format_duration(ms, buf, sizeof buf);
		CHECK(units_parse_duration_ms(buf, &ms2) == 0);
		CHECK(ms2 <= ms);
	}
	if (units_parse_time_ms(s, 1764480000000LL, &ms) == 0)
		CHECK(ms >= 0 && ms <= (1ll << 53));
}

static void
check_params(const cJSON *params)
{
	const cJSON *it;
	const char **v, *s;
	char cause[128];
	int64_t i;
	double d;
	int b, rc;

	rc = proto_params_check(params, known, cause, sizeof cause);
	CHECK(rc == 0 || rc == PROTO_E_PARAMS);
	if (rc != 0)
		CHECK(proto_utf8_valid(cause, strlen(cause)));
	if (params == NULL)
		return;
	for (it = params->child; it != NULL; it = it->next) {
		const char *n = it->string;

		if (proto_param_int(params, n, 1, 0, INT64_MAX, &i, cause,
		                    sizeof cause) == 0)
			CHECK(i >= 0 && i <= (1ll << 53));
		else
			CHECK(proto_utf8_valid(cause, strlen(cause)));
		if (proto_param_int(params, n, 0, -100, 100, &i, cause,
		                    sizeof cause) == 0)
			CHECK(i >= -100 && i <= 100);
		if (proto_param_double(params, n, 1, 0, 100, &d, cause,
		                       sizeof cause) == 0)
			CHECK(d >= 0 && d <= 100);
		proto_param_bool(params, n, 1, &b, cause, sizeof cause);
		if (proto_param_string(params, n, 1, 64, &s, cause,
		                       sizeof cause) == 0) {
			CHECK(strlen(s) <= 64);
			CHECK(proto_utf8_valid(s, strlen(s)));
			check_units(s);
		} else {
			CHECK(proto_utf8_valid(cause, strlen(cause)));
		}
		if (proto_param_strv(params, n, 1, 8, 256, &v, cause,
		                     sizeof cause) == 0) {
			size_t k;

			for (k = 0; v[k] != NULL; k++)
				CHECK(proto_utf8_valid(v[k], strlen(v[k])));
			CHECK(k <= 8);
			free(v);
		}
	}
}

static int
on_line(void *arg, char *line, size_t len)
{
	struct pass *p = arg;
	struct proto_msg m;
	const char *cause = NULL;
	size_t i, rlen = 0;
	char *out;
	int rc;

	CHECK(len > 0);
	CHECK(line[len] == '\0');
	for (i = 0; i < len; i++)
		p->hash = p->hash * 1099511628211ull ^ (unsigned char)line[i];
	p->hash = p->hash * 1099511628211ull ^ 0x10A;
	p->lines++;
	if (!p->check)
		return 0;

	CHECK(proto_utf8_valid(line, len));
	rc = proto_parse(line, len, &m, &cause);
	if (rc != 0) {
		CHECK(rc == PROTO_E_PARSE || rc == PROTO_E_INVALID_REQUEST ||
		      rc == PROTO_E_INTERNAL);
		CHECK(cause != NULL);
		CHECK(m.method == NULL && m.params == NULL);
		out = proto_encode_error(m.id, rc, cause, &rlen);
		check_reply_id(out, rlen, m.id);
		proto_msg_free(&m);
		return 0;
	}
	CHECK(m.root != NULL);
	switch (m.kind) {
	case PROTO_REQUEST:
		CHECK(m.id != NULL && m.method != NULL);
		CHECK(proto_utf8_valid(m.method, strlen(m.method)));
		break;
	case PROTO_NOTIFICATION:
		CHECK(m.id == NULL && m.method != NULL);
		break;
	case PROTO_RESPONSE:
		CHECK(m.id != NULL);
		CHECK((m.result == NULL) != (m.error == NULL));
		break;
	}
	check_params(m.params);
	if (m.result != NULL && cJSON_IsObject(m.result))
		check_params(m.result);
	/* Echo the params back, as a result would carry them. */
	if (m.kind == PROTO_REQUEST) {
		cJSON *copy =
		    m.params != NULL ? cJSON_Duplicate(m.params, 1) : NULL;

		/* Even unchecked strings (which may hold the NUL mark) must
		 * come out as a valid line. */
		out = proto_encode_result(m.id, copy, &rlen);
		check_reply_id(out, rlen, m.id);
		out = proto_encode_error(m.id, PROTO_E_METHOD, m.method, &rlen);
		check_reply_id(out, rlen, m.id);
	}
	if (m.kind != PROTO_RESPONSE)
		check_notification(&m);
	proto_msg_free(&m);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reader r;
	struct pass whole = {0}, pieces = {0};
	size_t max_line, chunk, off, n;
	int rc_whole, rc_pieces = 0;

	if (size < 2)
		return 0;
	max_line = 1 + (size_t)data[0] * 4;
	chunk = 1 + data[1] % 17;
	data += 2;
	size -= 2;

	whole.check = 1;
	proto_reader_init(&r, max_line);
	rc_whole =
	    proto_reader_feed(&r, (const char *)data, size, on_line, &whole);
	CHECK(r.cap <= max_line + 1);
	/* A framing error is final. */
	if (rc_whole == PROTO_FRAME_TOO_LONG || rc_whole == PROTO_FRAME_UTF8)
		CHECK(proto_reader_feed(&r, "{}\n", 3, on_line, &whole) ==
		      rc_whole);
	proto_reader_free(&r);

	/* The same bytes in small pieces give the same lines and verdict. */
	proto_reader_init(&r, max_line);
	for (off = 0; off < size && rc_pieces == 0; off += n) {
		n = size - off < chunk ? size - off : chunk;
		rc_pieces = proto_reader_feed(&r, (const char *)data + off, n,
		                              on_line, &pieces);
		CHECK(r.cap <= max_line + 1);
	}
	proto_reader_free(&r);
	CHECK(rc_whole == rc_pieces);
	CHECK(whole.lines == pieces.lines);
	CHECK(whole.hash == pieces.hash);
	return 0;
}
