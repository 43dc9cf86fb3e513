/*
 * Links the three cross-built libraries into one Mach-O program, so the
 * cross build shows they are usable before any project module uses them.
 */
#include <stdio.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <uv.h>

int
main(void)
{
	uv_loop_t loop;
	sqlite3 *db;
	cJSON *o = cJSON_CreateObject();
	int rc = 0;

	if (uv_loop_init(&loop) != 0 || uv_run(&loop, UV_RUN_NOWAIT) != 0 ||
	    uv_loop_close(&loop) != 0)
		rc = 1;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) !=
	        SQLITE_OK)
		rc = 1;
	sqlite3_close(db);
	if (o == NULL || cJSON_AddNumberToObject(o, "n", 1) == NULL)
		rc = 1;
	cJSON_Delete(o);
	printf("libuv %s, sqlite %s, cJSON %s\n", uv_version_string(),
	       sqlite3_libversion(), cJSON_Version());
	return rc;
}
