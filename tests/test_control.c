/*
 * The dispatcher decides from the table alone (daemon/control.h): before any
 * handler runs, control_dispatch_in() refuses an unknown method (-32601), a
 * caller an AUTH_ROOT row does not admit (-32002, before any params check),
 * params that are not an object, unknown or repeated members, missing
 * required ones and members of the wrong type (-32602, the first fault in
 * table order, with the message of proto_param_type). A handler runs only
 * when every check passes, and gets the daemon, peer, id and params it was
 * given, unchanged; what it returns is what the dispatcher returns.
 *
 * Part 1 drives a table of this file's own, whose handler records each call.
 * Part 2 drives the daemon's real table through control_dispatch() on a
 * daemon with a default config and nothing else (no store, no jobs, no
 * notify lists): it reads the method names from hello's answer and checks
 * that every one of them refuses an unknown member, and that the methods
 * with required params (or typed optional ones) refuse {} and wrong types
 * with the table's message. Only calls the table refuses are made there
 * (hello aside), so no handler touches the state that is not there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "daemon.h"
#include "proto.h"
#include "server.h"

/* ---- part 1: a table of our own ---- */

/* What the handler saw on its last call. */
static struct {
	int calls;
	struct daemon *d;
	uid_t uid;
	uint64_t client_id;
	const cJSON *req_id;
	const cJSON *params;
	const char *method; /* which row's handler ran */
	cJSON *result;      /* what it answered with */
	int rc;             /* what it is told to return */
} rec;

static int
record(const char *method, struct daemon *d, const struct peer *p,
       const cJSON *req_id, const cJSON *params, cJSON **result, char *cause,
       size_t causelen)
{
	rec.calls++;
	rec.d = d;
	rec.uid = p->uid;
	rec.client_id = p->client_id;
	rec.req_id = req_id;
	rec.params = params;
	rec.method = method;
	rec.result = NULL;
	if (rec.rc != 0) {
		snprintf(cause, causelen, "the handler said no");
		return rec.rc;
	}
	rec.result = *result = cJSON_CreateString(method);
	return 0;
}

static int
h_root(struct daemon *d, const struct peer *p, const cJSON *req_id,
       const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	return record("root_only", d, p, req_id, params, result, cause,
	              causelen);
}

static int
h_typed(struct daemon *d, const struct peer *p, const cJSON *req_id,
        const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	return record("typed", d, p, req_id, params, result, cause, causelen);
}

static int
h_owner(struct daemon *d, const struct peer *p, const cJSON *req_id,
        const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	return record("owner", d, p, req_id, params, result, cause, causelen);
}

static int
h_none(struct daemon *d, const struct peer *p, const cJSON *req_id,
       const cJSON *params, cJSON **result, char *cause, size_t causelen)
{
	return record("none", d, p, req_id, params, result, cause, causelen);
}

static const struct control_param root_params[] = {{"n", PROTO_T_INT, 1},
                                                   {NULL, PROTO_T_INT, 0}};
static const struct control_param typed_params[] = {
    {"n", PROTO_T_INT, 1},  {"s", PROTO_T_STRING, 0}, {"b", PROTO_T_BOOL, 0},
    {"v", PROTO_T_STRV, 0}, {"x", PROTO_T_NUMBER, 0}, {NULL, PROTO_T_INT, 0}};
static const struct control_param no_params[] = {{NULL, PROTO_T_INT, 0}};

static const struct control_method table[] = {
    {"root_only", h_root, AUTH_ROOT, root_params},
    {"typed", h_typed, AUTH_ANYONE, typed_params},
    {"owner", h_owner, AUTH_OWNER, no_params},
    {"none", h_none, AUTH_ANYONE, no_params},
};
#define NTABLE (sizeof table / sizeof table[0])

/* The handlers never look at it: only its address is passed through. */
static struct daemon fake_daemon;

struct outcome {
	int rc;
	int ran; /* calls of any handler during this dispatch */
	char cause[256];
};

/*
 * Dispatch method against the first n rows of our table as uid, with params
 * (not taken). Checks what holds for every call: params are left as they
 * were; on success the handler ran once and its result and return value
 * came back; on error *result is NULL. The handler's result is freed here.
 */
static struct outcome
dispatch_n(size_t n, const char *method, uid_t uid, const cJSON *params)
{
	static int sentinel;
	struct peer p = {.client_id = 77, .uid = uid, .gid = uid, .pid = 4242};
	struct outcome o;
	char *before = NULL, *after = NULL;
	cJSON *id = cJSON_CreateNumber(3);
	cJSON *result = (cJSON *)&sentinel;
	int calls = rec.calls;

	assert_non_null(id);
	memset(&o, 0, sizeof o);
	if (params != NULL) {
		before = cJSON_PrintUnformatted(params);
		assert_non_null(before);
	}
	o.rc = control_dispatch_in(table, n, &fake_daemon, &p, method, id,
	                           params, &result, o.cause, sizeof o.cause);
	o.ran = rec.calls - calls;
	if (params != NULL) {
		after = cJSON_PrintUnformatted(params);
		assert_non_null(after);
		assert_string_equal(before, after);
	}
	if (o.ran != 0) {
		/* It ran with what it was given, exactly. */
		assert_int_equal(o.ran, 1);
		assert_string_equal(rec.method, method);
		assert_ptr_equal(rec.d, &fake_daemon);
		assert_int_equal(rec.uid, uid);
		assert_int_equal(rec.client_id, 77);
		assert_ptr_equal(rec.req_id, id);
		assert_ptr_equal(rec.params, params);
		assert_int_equal(o.rc, rec.rc);
	}
	if (o.rc == 0) {
		assert_int_equal(o.ran, 1);
		assert_non_null(result);
		assert_ptr_equal(result, rec.result);
		cJSON_Delete(result);
	} else {
		assert_null(result);
		assert_true(o.cause[0] != '\0');
	}
	free(before);
	free(after);
	cJSON_Delete(id);
	return o;
}

static struct outcome
dispatch(const char *method, uid_t uid, const cJSON *params)
{
	return dispatch_n(NTABLE, method, uid, params);
}

/* The same with params parsed from json (NULL: no params at all). */
static struct outcome
dispatch_json(const char *method, uid_t uid, const char *json)
{
	struct outcome o;
	cJSON *params = NULL;

	if (json != NULL) {
		params = cJSON_Parse(json);
		assert_non_null(params);
	}
	o = dispatch(method, uid, params);
	cJSON_Delete(params);
	return o;
}

/* Refused with code and exactly cause (when not NULL); no handler ran. */
static void
refused(const char *method, uid_t uid, const char *json, int code,
        const char *cause)
{
	struct outcome o = dispatch_json(method, uid, json);

	if (o.rc != code || o.ran != 0 ||
	    (cause != NULL && strcmp(o.cause, cause) != 0))
		fail_msg("%s %s as uid %d: %d '%s' (handler ran %d times), "
		         "expected %d '%s'",
		         method, json != NULL ? json : "(no params)", (int)uid,
		         o.rc, o.cause, o.ran, code,
		         cause != NULL ? cause : "...");
}

static void
params_error(const char *json, const char *cause)
{
	refused("typed", 1000, json, PROTO_E_PARAMS, cause);
}

static void
runs(const char *method, uid_t uid, const char *json)
{
	struct outcome o = dispatch_json(method, uid, json);

	if (o.rc != 0 || o.ran != 1)
		fail_msg("%s %s as uid %d: %d '%s' (handler ran %d times), "
		         "expected the handler to run",
		         method, json != NULL ? json : "(no params)", (int)uid,
		         o.rc, o.cause, o.ran);
}

static int
reset(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof rec);
	return 0;
}

static void
test_unknown_method(void **state)
{
	struct outcome o;

	(void)state;
	refused("nope", 0, "{\"n\":1}", PROTO_E_METHOD,
	        "unknown method 'nope'");
	refused("nope", 1000, NULL, PROTO_E_METHOD, "unknown method 'nope'");
	/* Names match whole and exactly. */
	refused("Typed", 0, "{\"n\":1}", PROTO_E_METHOD, NULL);
	refused("typ", 0, "{\"n\":1}", PROTO_E_METHOD, NULL);
	refused("typed ", 0, "{\"n\":1}", PROTO_E_METHOD, NULL);
	refused("", 0, NULL, PROTO_E_METHOD, "unknown method ''");
	/* Only the n rows given are the table. */
	o = dispatch_n(1, "typed", 0, NULL);
	assert_int_equal(o.rc, PROTO_E_METHOD);
	assert_int_equal(o.ran, 0);
	o = dispatch_n(0, "root_only", 0, NULL);
	assert_int_equal(o.rc, PROTO_E_METHOD);
	assert_int_equal(o.ran, 0);
	assert_int_equal(rec.calls, 0);
	/* A long name is cut short in the cause. */
	o = dispatch_json(
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	    0, NULL);
	assert_int_equal(o.rc, PROTO_E_METHOD);
	assert_true(strlen(o.cause) < 100);
}

static void
test_root_only(void **state)
{
	static const char *const bad[] = {
	    NULL,            /* n missing */
	    "{}",            /* n missing */
	    "{\"n\":1}",     /* all fine */
	    "{\"n\":\"1\"}", /* wrong type */
	    "{\"zz\":1}",    /* unknown member */
	    "{\"n\":null}",  /* null for a required one */
	    "[1]",           /* not an object */
	    "\"params\"",    /* not an object */
	    "null",          /* not an object */
	};
	struct outcome o;
	size_t i;

	(void)state;
	/* Not root: refused whatever the params, before looking at them. */
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		o = dispatch_json("root_only", 1000, bad[i]);
		assert_int_equal(o.rc, PROTO_E_PERM);
		assert_int_equal(o.ran, 0);
		assert_non_null(strstr(o.cause, "root_only"));
		o = dispatch_json("root_only", 1, bad[i]);
		assert_int_equal(o.rc, PROTO_E_PERM);
	}
	assert_int_equal(rec.calls, 0);
	/* Root: the params are checked as for anyone, then it runs. */
	refused("root_only", 0, "{\"zz\":1}", PROTO_E_PARAMS,
	        "invalid params: 'zz' is not a known parameter");
	refused("root_only", 0, "{}", PROTO_E_PARAMS,
	        "invalid params: 'n' is required");
	assert_int_equal(rec.calls, 0);
	runs("root_only", 0, "{\"n\":1}");
	assert_int_equal(rec.calls, 1);
	/* The other rows do not ask for root. */
	runs("typed", 1000, "{\"n\":1}");
	runs("owner", 1000, NULL);
	runs("none", 1000, "{}");
}

static void
test_not_object(void **state)
{
	static const char *const bad[] = {"[]", "[{\"n\":1}]", "\"n\"",
	                                  "1",  "true",        "null"};
	struct outcome o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		o = dispatch_json("typed", 1000, bad[i]);
		assert_int_equal(o.rc, PROTO_E_PARAMS);
		assert_int_equal(o.ran, 0);
		assert_non_null(strstr(o.cause, "must be an object"));
		/* A method without params refuses them too. */
		o = dispatch_json("none", 1000, bad[i]);
		assert_int_equal(o.rc, PROTO_E_PARAMS);
		assert_int_equal(o.ran, 0);
	}
	assert_int_equal(rec.calls, 0);
}

static void
test_unknown_member(void **state)
{
	(void)state;
	params_error("{\"n\":1,\"zz\":1}",
	             "invalid params: 'zz' is not a known parameter");
	params_error("{\"zz\":1,\"n\":1}",
	             "invalid params: 'zz' is not a known parameter");
	/* Names are case-sensitive. */
	params_error("{\"N\":1}",
	             "invalid params: 'N' is not a known parameter");
	/* Unknown even when null, and before a missing required one. */
	params_error("{\"zz\":null}",
	             "invalid params: 'zz' is not a known parameter");
	params_error("{\"zz\":1}",
	             "invalid params: 'zz' is not a known parameter");
	/* Before a wrong type, wherever it stands. */
	params_error("{\"n\":\"x\",\"zz\":1}",
	             "invalid params: 'zz' is not a known parameter");
	/* A row without params knows no name. */
	refused("none", 1000, "{\"n\":1}", PROTO_E_PARAMS,
	        "invalid params: 'n' is not a known parameter");
	refused("owner", 1000, "{\"id\":1}", PROTO_E_PARAMS,
	        "invalid params: 'id' is not a known parameter");
	assert_int_equal(rec.calls, 0);
}

static void
given_twice(const char *name, const char *cause)
{
	cJSON *params = cJSON_CreateObject();
	struct outcome o;

	assert_non_null(params);
	cJSON_AddItemToObject(params, "n", cJSON_CreateNumber(1));
	/* cJSON_Add* appends without looking for the name. */
	cJSON_AddItemToObject(params, name, cJSON_CreateString("first"));
	cJSON_AddItemToObject(params, name, cJSON_CreateString("second"));
	o = dispatch("typed", 1000, params);
	assert_int_equal(o.rc, PROTO_E_PARAMS);
	assert_int_equal(o.ran, 0);
	assert_string_equal(o.cause, cause);
	cJSON_Delete(params);
}

static void
test_given_twice(void **state)
{
	cJSON *params;
	struct outcome o;

	(void)state;
	given_twice("s", "invalid params: 's' is given twice");
	/* The same value twice is no better. */
	params = cJSON_CreateObject();
	assert_non_null(params);
	cJSON_AddItemToObject(params, "n", cJSON_CreateNumber(1));
	cJSON_AddItemToObject(params, "n", cJSON_CreateNumber(1));
	o = dispatch("typed", 1000, params);
	assert_int_equal(o.rc, PROTO_E_PARAMS);
	assert_int_equal(o.ran, 0);
	assert_string_equal(o.cause, "invalid params: 'n' is given twice");
	cJSON_Delete(params);
	/* Twice and of the wrong type: twice is told. */
	params = cJSON_CreateObject();
	assert_non_null(params);
	cJSON_AddItemToObject(params, "n", cJSON_CreateString("one"));
	cJSON_AddItemToObject(params, "n", cJSON_CreateString("two"));
	o = dispatch("typed", 1000, params);
	assert_int_equal(o.rc, PROTO_E_PARAMS);
	assert_string_equal(o.cause, "invalid params: 'n' is given twice");
	cJSON_Delete(params);
	/* Twice as null: still twice. */
	params = cJSON_CreateObject();
	assert_non_null(params);
	cJSON_AddItemToObject(params, "n", cJSON_CreateNumber(1));
	cJSON_AddItemToObject(params, "x", cJSON_CreateNull());
	cJSON_AddItemToObject(params, "x", cJSON_CreateNull());
	o = dispatch("typed", 1000, params);
	assert_int_equal(o.rc, PROTO_E_PARAMS);
	assert_string_equal(o.cause, "invalid params: 'x' is given twice");
	cJSON_Delete(params);
	/* An unknown name twice is unknown first. */
	given_twice("zz", "invalid params: 'zz' is not a known parameter");
	assert_int_equal(rec.calls, 0);
}

static void
test_required(void **state)
{
	(void)state;
	params_error(NULL, "invalid params: 'n' is required");
	params_error("{}", "invalid params: 'n' is required");
	params_error("{\"s\":\"a\",\"b\":true}",
	             "invalid params: 'n' is required");
	/* JSON null counts as absent. */
	params_error("{\"n\":null}", "invalid params: 'n' is required");
	params_error("{\"n\":null,\"s\":\"a\"}",
	             "invalid params: 'n' is required");
	assert_int_equal(rec.calls, 0);
	/* Null for an optional one is absent, which is fine. */
	runs("typed", 1000, "{\"n\":1,\"s\":null}");
	runs("typed", 1000,
	     "{\"n\":1,\"s\":null,\"b\":null,\"v\":null,\"x\":null}");
	assert_int_equal(rec.calls, 2);
}

static void
test_types(void **state)
{
	(void)state;
	/* PROTO_T_INT */
	params_error("{\"n\":\"1\"}", "invalid params: 'n' must be an integer");
	params_error("{\"n\":true}", "invalid params: 'n' must be an integer");
	params_error("{\"n\":false}", "invalid params: 'n' must be an integer");
	params_error("{\"n\":[1]}", "invalid params: 'n' must be an integer");
	params_error("{\"n\":{}}", "invalid params: 'n' must be an integer");
	/* PROTO_T_STRING */
	params_error("{\"n\":1,\"s\":1}",
	             "invalid params: 's' must be a string");
	params_error("{\"n\":1,\"s\":true}",
	             "invalid params: 's' must be a string");
	params_error("{\"n\":1,\"s\":[\"a\"]}",
	             "invalid params: 's' must be a string");
	params_error("{\"n\":1,\"s\":{}}",
	             "invalid params: 's' must be a string");
	/* PROTO_T_BOOL */
	params_error("{\"n\":1,\"b\":1}",
	             "invalid params: 'b' must be true or false");
	params_error("{\"n\":1,\"b\":0}",
	             "invalid params: 'b' must be true or false");
	params_error("{\"n\":1,\"b\":\"true\"}",
	             "invalid params: 'b' must be true or false");
	params_error("{\"n\":1,\"b\":[true]}",
	             "invalid params: 'b' must be true or false");
	/* PROTO_T_STRV */
	params_error("{\"n\":1,\"v\":\"a\"}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":1}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":{\"a\":\"b\"}}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":[\"a\",1]}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":[1,\"a\"]}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":[\"a\",null]}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":[[\"a\"]]}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"n\":1,\"v\":[true]}",
	             "invalid params: 'v' must be an array of strings");
	/* PROTO_T_NUMBER (NaN and infinities cannot be written in JSON) */
	params_error("{\"n\":1,\"x\":\"1\"}",
	             "invalid params: 'x' must be a number");
	params_error("{\"n\":1,\"x\":true}",
	             "invalid params: 'x' must be a number");
	params_error("{\"n\":1,\"x\":[1]}",
	             "invalid params: 'x' must be a number");
	assert_int_equal(rec.calls, 0);
	/* Each of the right type passes. */
	runs("typed", 1000, "{\"n\":-5}");
	runs("typed", 1000, "{\"n\":1,\"s\":\"\"}");
	runs("typed", 1000, "{\"n\":1,\"b\":false}");
	runs("typed", 1000, "{\"n\":1,\"v\":[]}");
	runs("typed", 1000, "{\"n\":1,\"v\":[\"a\",\"\"]}");
	runs("typed", 1000, "{\"n\":1,\"x\":0.25}");
	runs("typed", 1000, "{\"n\":1,\"x\":-1e300}");
	assert_int_equal(rec.calls, 7);
}

static void
test_table_order(void **state)
{
	(void)state;
	/* Several wrong: the first in the table is told, whatever the order
	 * of the members in the request. */
	params_error("{\"x\":\"1\",\"v\":1,\"b\":1,\"s\":1,\"n\":\"1\"}",
	             "invalid params: 'n' must be an integer");
	params_error("{\"x\":\"1\",\"v\":1,\"b\":1,\"s\":1,\"n\":1}",
	             "invalid params: 's' must be a string");
	params_error("{\"x\":\"1\",\"v\":1,\"b\":1,\"n\":1}",
	             "invalid params: 'b' must be true or false");
	params_error("{\"x\":\"1\",\"v\":1,\"n\":1}",
	             "invalid params: 'v' must be an array of strings");
	params_error("{\"x\":\"1\",\"n\":1}",
	             "invalid params: 'x' must be a number");
	/* A missing required one comes before a wrong type after it... */
	params_error("{\"x\":\"1\",\"s\":1}",
	             "invalid params: 'n' is required");
	/* ...and unknown members before both. */
	params_error("{\"x\":\"1\",\"s\":1,\"zz\":1}",
	             "invalid params: 'zz' is not a known parameter");
	assert_int_equal(rec.calls, 0);
}

static void
test_handler_runs(void **state)
{
	struct outcome o;

	(void)state;
	/* Every check passes: the handler runs once, with params as given
	 * (dispatch_n compares the pointer and the printed tree). */
	runs("typed", 1000,
	     "{\"x\":1.5,\"v\":[\"a\",\"b\"],\"b\":true,\"s\":\"s\",\"n\":7}");
	assert_int_equal(rec.calls, 1);
	runs("typed", 0, "{\"n\":0}");
	runs("none", 1000, NULL);
	runs("none", 0, "{}");
	runs("owner", 1000, "{}");
	assert_int_equal(rec.calls, 5);
	/* What the handler returns is what the dispatcher returns. */
	rec.rc = PROTO_E_STATE;
	o = dispatch_json("typed", 1000, "{\"n\":1}");
	assert_int_equal(o.rc, PROTO_E_STATE);
	assert_int_equal(o.ran, 1);
	assert_string_equal(o.cause, "the handler said no");
	rec.rc = CONTROL_DEFERRED;
	o = dispatch_json("owner", 1000, NULL);
	assert_int_equal(o.rc, CONTROL_DEFERRED);
	assert_int_equal(o.ran, 1);
	rec.rc = 0;
	assert_int_equal(rec.calls, 7);
}

/* ---- part 2: the daemon's table ---- */

/* Every method PROTOCOL.md describes. */
static const char *const protocol_methods[] = {
    "hello",  "info",    "history",  "subscribe", "unsubscribe",
    "submit", "job_pid", "job_exit", "resume",    "status",
    "show",   "cancel",  "wait",     "logs",      "events",
};
#define NPROTOCOL (sizeof protocol_methods / sizeof protocol_methods[0])

struct real {
	struct daemon d;
	cJSON *methods; /* hello's "methods" (a detached copy) */
};

static int
real_setup(void **state)
{
	struct real *r = calloc(1, sizeof *r);

	if (r == NULL)
		return -1;
	config_defaults(&r->d.cfg, 0);
	r->d.sock_lock_fd = -1;
	*state = r;
	return 0;
}

static int
real_teardown(void **state)
{
	struct real *r = *state;

	cJSON_Delete(r->methods);
	free(r);
	return 0;
}

static int
real_call(struct real *r, uid_t uid, const char *method, const char *json,
          cJSON **result, char *cause, size_t causelen)
{
	struct peer p = {.client_id = 1, .uid = uid, .gid = uid, .pid = 4242};
	cJSON *params = NULL, *id = cJSON_CreateNumber(9);
	int rc;

	assert_non_null(id);
	if (json != NULL) {
		params = cJSON_Parse(json);
		assert_non_null(params);
	}
	cause[0] = '\0';
	rc = control_dispatch(&r->d, &p, method, id, params, result, cause,
	                      causelen);
	cJSON_Delete(params);
	cJSON_Delete(id);
	return rc;
}

/* Refused before the handler: with exactly cause, and no result. */
static void
real_refused(struct real *r, uid_t uid, const char *method, const char *json,
             const char *cause)
{
	cJSON *result = NULL;
	char got[256];
	int rc;

	rc = real_call(r, uid, method, json, &result, got, sizeof got);
	if (rc != PROTO_E_PARAMS || strcmp(got, cause) != 0)
		fail_msg("%s %s as uid %d: %d '%s', expected %d '%s'", method,
		         json != NULL ? json : "(no params)", (int)uid, rc, got,
		         PROTO_E_PARAMS, cause);
	assert_null(result);
}

/* hello's list of methods, read once. */
static const cJSON *
real_methods(struct real *r)
{
	cJSON *result = NULL;
	const cJSON *m, *it;
	char cause[256];
	int rc;

	if (r->methods != NULL)
		return r->methods;
	rc = real_call(r, 1000, "hello", "{\"version\":1}", &result, cause,
	               sizeof cause);
	if (rc != 0)
		fail_msg("hello: %d %s", rc, cause);
	assert_non_null(result);
	it = cJSON_GetObjectItemCaseSensitive(result, "uid");
	assert_true(cJSON_IsNumber(it));
	assert_int_equal(it->valueint, 1000);
	m = cJSON_GetObjectItemCaseSensitive(result, "methods");
	assert_true(cJSON_IsArray(m));
	r->methods = cJSON_Duplicate(m, 1);
	assert_non_null(r->methods);
	cJSON_Delete(result);
	cJSON_ArrayForEach(it, r->methods)
	{
		assert_true(cJSON_IsString(it));
	}
	return r->methods;
}

static int
has_name(const cJSON *a, const char *name)
{
	const cJSON *it;
	int n = 0;

	cJSON_ArrayForEach(it, a)
	{
		if (strcmp(it->valuestring, name) == 0)
			n++;
	}
	return n;
}

static void
test_real_methods_listed(void **state)
{
	const cJSON *methods = real_methods(*state);
	const cJSON *it;
	size_t i;

	/* All of PROTOCOL.md's, each once. */
	for (i = 0; i < NPROTOCOL; i++)
		if (has_name(methods, protocol_methods[i]) != 1)
			fail_msg("hello lists '%s' %d times",
			         protocol_methods[i],
			         has_name(methods, protocol_methods[i]));
	cJSON_ArrayForEach(it, methods)
	{
		assert_int_equal(has_name(methods, it->valuestring), 1);
	}
	assert_true((size_t)cJSON_GetArraySize(methods) >= NPROTOCOL);
}

static void
test_real_unknown_member(void **state)
{
	struct real *r = *state;
	const cJSON *it;
	cJSON *result;
	char cause[256];
	int rc;

	/* Every method the daemon lists, as root (admitted by any row) and
	 * as a user (admitted, or refused as not root before the params). */
	cJSON_ArrayForEach(it, real_methods(r))
	{
		real_refused(r, 0, it->valuestring, "{\"bogus_param\":1}",
		             "invalid params: 'bogus_param' is not a known "
		             "parameter");
		result = NULL;
		rc = real_call(r, 1000, it->valuestring, "{\"bogus_param\":1}",
		               &result, cause, sizeof cause);
		assert_null(result);
		if (rc == PROTO_E_PERM) {
			assert_non_null(strstr(cause, it->valuestring));
		} else {
			assert_int_equal(rc, PROTO_E_PARAMS);
			assert_string_equal(cause, "invalid params: "
			                           "'bogus_param' is not a "
			                           "known parameter");
		}
	}
	/* A method's unknown name beside its known ones. */
	real_refused(r, 1000, "hello", "{\"version\":1,\"bogus_param\":1}",
	             "invalid params: 'bogus_param' is not a known parameter");
	real_refused(r, 1000, "submit",
	             "{\"argv\":[\"true\"],\"cwd\":\"/\",\"bogus_param\":1}",
	             "invalid params: 'bogus_param' is not a known parameter");
	/* Params that are not an object, as the server never passes. */
	result = NULL;
	rc = real_call(r, 1000, "info", "[]", &result, cause, sizeof cause);
	assert_int_equal(rc, PROTO_E_PARAMS);
	assert_null(result);
}

/* The first required parameter of each method that has one, in the
 * table's order (control.c); {} is refused naming it. */
static const struct {
	const char *method, *first;
} required[] = {
    {"hello", "version"}, {"submit", "argv"}, {"job_pid", "id"},
    {"job_exit", "id"},   {"resume", "id"},   {"show", "id"},
    {"cancel", "id"},     {"wait", "id"},     {"logs", "id"},
};

static void
test_real_required(void **state)
{
	struct real *r = *state;
	char cause[128];
	size_t i;

	for (i = 0; i < sizeof required / sizeof required[0]; i++) {
		assert_int_equal(has_name(real_methods(r), required[i].method),
		                 1);
		snprintf(cause, sizeof cause,
		         "invalid params: '%s' is required", required[i].first);
		real_refused(r, 1000, required[i].method, "{}", cause);
		real_refused(r, 1000, required[i].method, NULL, cause);
		real_refused(r, 0, required[i].method, "{}", cause);
	}
	/* The second required one, once the first is there. */
	real_refused(r, 1000, "submit", "{\"argv\":[\"true\"]}",
	             "invalid params: 'cwd' is required");
	real_refused(r, 1000, "submit", "{\"argv\":[\"true\"],\"cwd\":null}",
	             "invalid params: 'cwd' is required");
	real_refused(r, 1000, "job_pid", "{\"id\":1}",
	             "invalid params: 'pid' is required");
	real_refused(r, 1000, "hello", "{\"version\":null}",
	             "invalid params: 'version' is required");
}

/* Wrong types the table refuses, optional members included, so these
 * are safe to send with nothing behind the daemon. */
static const struct {
	const char *method, *params, *cause;
} typed[] = {
    {"hello", "{\"version\":\"1\"}",
     "invalid params: 'version' must be an integer"},
    {"hello", "{\"version\":1,\"client\":1}",
     "invalid params: 'client' must be a string"},
    {"history", "{\"job_id\":\"1\"}",
     "invalid params: 'job_id' must be an integer"},
    {"history", "{\"since_ms\":true}",
     "invalid params: 'since_ms' must be an integer"},
    {"subscribe", "{\"samples\":1}",
     "invalid params: 'samples' must be true or false"},
    {"subscribe", "{\"pid\":\"1\"}",
     "invalid params: 'pid' must be an integer"},
    {"submit", "{\"argv\":\"true\",\"cwd\":\"/\"}",
     "invalid params: 'argv' must be an array of strings"},
    {"submit", "{\"argv\":[\"true\",1],\"cwd\":\"/\"}",
     "invalid params: 'argv' must be an array of strings"},
    {"submit", "{\"argv\":[\"true\"],\"cwd\":1}",
     "invalid params: 'cwd' must be a string"},
    {"submit", "{\"attached\":1,\"argv\":[\"true\"],\"cwd\":\"/\"}",
     "invalid params: 'attached' must be true or false"},
    {"submit", "{\"argv\":[\"true\"],\"cwd\":\"/\",\"wait_free_pct\":\"5\"}",
     "invalid params: 'wait_free_pct' must be a number"},
    {"submit", "{\"argv\":[\"true\"],\"cwd\":\"/\",\"env\":[1]}",
     "invalid params: 'env' must be an array of strings"},
    {"job_pid", "{\"id\":1,\"pid\":\"2\"}",
     "invalid params: 'pid' must be an integer"},
    {"job_exit", "{\"id\":1,\"signal\":\"KILL\"}",
     "invalid params: 'signal' must be an integer"},
    {"resume", "{\"id\":false}",
     "invalid params: 'id' must be a job id (an integer, or a string: "
     "\"42\", \"A42\", \"A42_3\")"},
    {"status", "{\"all\":\"yes\"}",
     "invalid params: 'all' must be true or false"},
    {"show", "{\"id\":1,\"env\":1}",
     "invalid params: 'env' must be true or false"},
    {"cancel", "{\"id\":[1]}",
     "invalid params: 'id' must be a job id (an integer, or a string: "
     "\"42\", \"A42\", \"A42_3\")"},
    {"wait", "{\"id\":true}",
     "invalid params: 'id' must be a job id (an integer, or a string: "
     "\"42\", \"A42\", \"A42_3\")"},
    {"logs", "{\"id\":1,\"follow\":\"yes\"}",
     "invalid params: 'follow' must be true or false"},
    {"events", "{\"limit\":\"10\"}",
     "invalid params: 'limit' must be an integer"},
};

static void
test_real_types(void **state)
{
	struct real *r = *state;
	size_t i;

	for (i = 0; i < sizeof typed / sizeof typed[0]; i++)
		real_refused(r, 1000, typed[i].method, typed[i].params,
		             typed[i].cause);
}

int
main(void)
{
	const struct CMUnitTest own[] = {
	    cmocka_unit_test_setup(test_unknown_method, reset),
	    cmocka_unit_test_setup(test_root_only, reset),
	    cmocka_unit_test_setup(test_not_object, reset),
	    cmocka_unit_test_setup(test_unknown_member, reset),
	    cmocka_unit_test_setup(test_given_twice, reset),
	    cmocka_unit_test_setup(test_required, reset),
	    cmocka_unit_test_setup(test_types, reset),
	    cmocka_unit_test_setup(test_table_order, reset),
	    cmocka_unit_test_setup(test_handler_runs, reset),
	};
	const struct CMUnitTest daemon_table[] = {
	    cmocka_unit_test(test_real_methods_listed),
	    cmocka_unit_test(test_real_unknown_member),
	    cmocka_unit_test(test_real_required),
	    cmocka_unit_test(test_real_types),
	};
	int failed;

	failed = cmocka_run_group_tests_name("own table", own, NULL, NULL);
	failed += cmocka_run_group_tests_name("daemon table", daemon_table,
	                                      real_setup, real_teardown);
	return failed != 0;
}
