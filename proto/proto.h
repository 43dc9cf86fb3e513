/*
 * Wire protocol shared by stageloadd and libstageload: newline-delimited
 * JSON-RPC 2.0 over a Unix stream socket. proto/PROTOCOL.md is the
 * specification; this file only implements it.
 */
#ifndef SL_PROTO_H
#define SL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The versions the daemon speaks: PROTO_VERSION_MIN..PROTO_VERSION. */
#define PROTO_VERSION 2
#define PROTO_VERSION_MIN 1
#define PROTO_MAX_LINE_DEFAULT (4u << 20)     /* bytes, newline excluded */
#define PROTO_MAX_SAFE_INT 9007199254740992.0 /* 2^53 */

/* JSON-RPC error codes; the meaning of each is in PROTOCOL.md. */
enum proto_error {
	PROTO_E_PARSE = -32700,
	PROTO_E_INVALID_REQUEST = -32600,
	PROTO_E_METHOD = -32601,
	PROTO_E_PARAMS = -32602,
	PROTO_E_INTERNAL = -32603,
	PROTO_E_HELLO = -32000,   /* hello required first, or sent twice */
	PROTO_E_VERSION = -32001, /* protocol version not supported */
	PROTO_E_PERM = -32002,    /* peer may not do this */
	PROTO_E_NOJOB = -32003,   /* no such job */
	PROTO_E_LIMIT = -32004,   /* a per-uid or global limit was reached */
	PROTO_E_STATE = -32005,   /* job is in the wrong state for this */
	PROTO_E_STORAGE = -32006, /* the database failed; try again */
	PROTO_E_NOPROC = -32007,  /* no such process */
};

/*
 * Line framing. Bytes go in with proto_reader_feed(); every complete line
 * (newline stripped, NUL-terminated in place) is passed to the callback.
 * A line longer than max_line bytes is a framing violation: feed returns
 * PROTO_FRAME_TOO_LONG and the connection must be closed. Invalid UTF-8 is
 * also a framing violation (PROTO_FRAME_UTF8). The callback returns 0 to go
 * on, or non-zero to stop feeding (that value is returned).
 *
 * Details: the limit counts the bytes of the line without its terminator
 * ("\n", or "\r\n": a '\r' before the '\n' is not counted), and is
 * enforced before the newline arrives; the buffer never exceeds
 * max_line + 1 bytes. A '\r' before the '\n' is dropped; empty lines are
 * skipped. After a framing violation every later feed returns the same
 * error. Bytes after a line whose callback stopped the feed are discarded
 * (stopping is meant for closing the connection). -ENOMEM when the buffer
 * cannot grow. max_line 0 means PROTO_MAX_LINE_DEFAULT.
 *
 * max_buf (0 after init: no bound but the line's) caps the buffer's size,
 * cap, which is the memory the reader holds: a feed that needs more returns
 * PROTO_READ_LIMIT, sticky like a framing error. The daemon sets it before
 * each feed from what is left of the peer's per-uid budget.
 *
 * A callback that returns PROTO_READ_PAUSE stops the feed after its line,
 * and the reader keeps the bytes that followed (rest): the next feed
 * takes them before its own, and a feed of no bytes resumes them. So a
 * server can bound the requests one connection makes it handle in a turn
 * of its loop; it stops reading meanwhile, so the rest is at most one
 * read. proto_reader_mem is what the reader holds, rest included.
 */
#define PROTO_READ_PAUSE (-1004)
#define PROTO_FRAME_TOO_LONG (-1001)
#define PROTO_FRAME_UTF8 (-1002)
#define PROTO_READ_LIMIT (-1003)

struct proto_reader {
	char *buf;
	size_t len;
	size_t cap;
	size_t max_line;
	size_t max_buf; /* 0: no bound but max_line + 1 */
	int err;        /* sticky framing error */
	char *rest;     /* bytes after a paused line, not yet framed */
	size_t rest_len;
};

typedef int (*proto_line_cb)(void *arg, char *line, size_t len);

void proto_reader_init(struct proto_reader *r, size_t max_line);
void proto_reader_free(struct proto_reader *r);
int proto_reader_feed(struct proto_reader *r, const char *data, size_t len,
                      proto_line_cb cb, void *arg);
size_t proto_reader_mem(const struct proto_reader *r);

/* 1 when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF, no truncated sequence). NUL bytes are valid. */
int proto_utf8_valid(const char *s, size_t len);
/* A malloc'd NUL-terminated copy of s[0..len) where every byte that does
 * not start a well-formed sequence is replaced by U+FFFD (for log data and
 * messages quoting the peer); *outlen (may be NULL) gets its length. */
char *proto_utf8_sanitize(const char *s, size_t len, size_t *outlen);

/*
 * A parsed JSON-RPC message. proto_parse() classifies a line; on failure it
 * returns a JSON-RPC error code (PROTO_E_PARSE or PROTO_E_INVALID_REQUEST),
 * sets *cause to a static readable string, and m->id to the request id when
 * one could be read (so the error reply can carry it). PROTO_E_INTERNAL
 * when out of memory. Call proto_msg_free() whatever it returned.
 *
 * An id is a number, a string, or null (then the message is still a
 * request, answered with id null). A number or string id is kept as a
 * cJSON raw node whose valuestring is its text as sent, so that a reply
 * echoes it byte for byte; proto_id_int reads an integer from it. That
 * text must be strict JSON: a number spelt "01" or "1." (cJSON takes
 * those) or a string holding a raw control byte is an invalid request. A
 * message with a method (a request, or a notification when it has no id) may
 * hold only jsonrpc, id, method and params; responses may carry members we do
 * not know. Duplicate jsonrpc/id/method/params/result/error members are an
 * invalid request. A
 * "\u0000" escape does not end a string early: the parameter getters
 * reject such a string, and a method or id holding one is an invalid
 * request.
 */
enum proto_kind {
	PROTO_REQUEST,
	PROTO_NOTIFICATION,
	PROTO_RESPONSE,
};

struct proto_msg {
	cJSON *root; /* owned */
	enum proto_kind kind;
	const cJSON *id;     /* request/response id, NULL for notifications */
	const char *method;  /* requests and notifications */
	const cJSON *params; /* object, or NULL when absent */
	const cJSON *result; /* responses */
	const cJSON *error;  /* responses */
};

int proto_parse(const char *line, size_t len, struct proto_msg *m,
                const char **cause);
void proto_msg_free(struct proto_msg *m);
/* 0 with *out set when id (as proto_parse leaves it, or a number node) is
 * an integer within +-2^53, whatever its spelling (7, 7.0, 7e0); else -1. */
int proto_id_int(const cJSON *id, int64_t *out);

/*
 * Encoders return a malloc'd, newline-terminated line and its length in
 * *len, or NULL when out of memory. They take ownership of the cJSON they
 * are given (result, params), even on failure. A reply carries the id it
 * is given as the request sent it (a raw id from proto_parse byte for byte;
 * an integer number node exactly, as by proto_int_create), or null when id
 * is NULL.
 */
char *proto_encode_request(int64_t id, const char *method, cJSON *params,
                           size_t *len);
char *proto_encode_result(const cJSON *id, cJSON *result, size_t *len);
/* The start of a result line up to its result value: `{"jsonrpc":"2.0",
 * "id":ID,"result":`, for an answer written in parts (server_stream_*);
 * the parts then write the result and the closing "}\n". */
char *proto_encode_result_head(const cJSON *id, size_t *len);
char *proto_encode_error(const cJSON *id, int code, const char *message,
                         size_t *len);
/* The same with an error "data" member (owned, may be NULL). The message is
 * made valid UTF-8 (proto_utf8_sanitize) before it is encoded. */
char *proto_encode_error_data(const cJSON *id, int code, const char *message,
                              cJSON *data, size_t *len);
char *proto_encode_notification(const char *method, cJSON *params, size_t *len);

/*
 * Typed parameter access with the rules of PROTOCOL.md: integers are read
 * from valuedouble and must be integral, inside [min, max] and at most 2^53;
 * strings must be valid UTF-8 without NUL and at most max_len bytes. Each
 * returns 0 when found and valid, 1 when absent and not required (the
 * output is left untouched, so set defaults first), or PROTO_E_PARAMS with a
 * readable message written to cause.
 *
 * A member whose value is JSON null counts as absent. A max_len, max_items
 * or total_max of 0 means no limit. Note: cJSON reads numbers with strtod,
 * so 2^53 + 1 arrives as 2^53 and is accepted as that.
 */
int proto_param_int(const cJSON *params, const char *name, int required,
                    int64_t min, int64_t max, int64_t *out, char *cause,
                    size_t causelen);
int proto_param_double(const cJSON *params, const char *name, int required,
                       double min, double max, double *out, char *cause,
                       size_t causelen);
int proto_param_bool(const cJSON *params, const char *name, int required,
                     int *out, char *cause, size_t causelen);
int proto_param_string(const cJSON *params, const char *name, int required,
                       size_t max_len, const char **out, char *cause,
                       size_t causelen);
/* An array of strings; *out is a malloc'd NULL-terminated vector of
 * pointers into the cJSON tree (free only the vector). total_max bounds the
 * sum of the string lengths. */
int proto_param_strv(const cJSON *params, const char *name, int required,
                     size_t max_items, size_t total_max, const char ***out,
                     char *cause, size_t causelen);
/* An array of integers, each from min to max, at most max_items of them;
 * *out is malloc'd (NULL when the array is empty or absent), *n its
 * length. */
int proto_param_intv(const cJSON *params, const char *name, int required,
                     size_t max_items, int64_t min, int64_t max, int64_t **out,
                     size_t *n, char *cause, size_t causelen);
/* A parameter's JSON type, as a dispatch table lists it. */
enum proto_type {
	PROTO_T_INT,    /* a number; integral and in range: proto_param_int */
	PROTO_T_NUMBER, /* a finite number */
	PROTO_T_BOOL,
	PROTO_T_STRING,
	PROTO_T_STRV, /* an array of strings */
	PROTO_T_INTV, /* an array of integers: proto_param_intv */
	/* a job: an integer, or a string naming one ("42", "A42_3") or an
	 * array ("A42"), as the daemon resolves them (control-ids.c) */
	PROTO_T_ID,
	PROTO_T_IDV, /* an array of PROTO_T_ID */
};
/* 0 when name is absent (JSON null too) and not required, or present with
 * type t; else PROTO_E_PARAMS with the cause proto_param_* would give.
 * Ranges, lengths and encodings stay with proto_param_*. */
int proto_param_type(const cJSON *params, const char *name, enum proto_type t,
                     int required, char *cause, size_t causelen);
/* PROTO_E_PARAMS when params holds a member not in known (NULL-terminated),
 * or is not an object. NULL params are fine. */
int proto_params_check(const cJSON *params, const char *const *known,
                       char *cause, size_t causelen);

/*
 * Add an integer member (bytes, milliseconds, ids) exactly; returns the new
 * item or NULL. cJSON prints 2^53 as 9.00719925474099e+15 (off by 2), so
 * from 10^15 on the item is a cJSON raw node holding the decimal digits:
 * it prints exactly, but cJSON_IsNumber() is false on it. Keep values
 * within +-2^53 (PROTOCOL.md).
 */
cJSON *proto_add_int(cJSON *obj, const char *name, int64_t v);
/* Print a tree as cJSON_Print(Unformatted) would, but its integers up to
 * 2^53 exactly (for a tree parsed from the wire, whose numbers cJSON would
 * print with %.15g). malloc'd, NULL when out of memory. */
char *proto_print(const cJSON *item, int formatted);
/* The same item, unattached (for arrays). */
cJSON *proto_int_create(int64_t v);

#endif
