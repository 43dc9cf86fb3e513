/*
 * sl_call_pages against a real daemon, for tests/answer-pages.py:
 *
 *   sl_pages SOCKET METHOD PARAMS ITEMS [PAGES]
 *
 * prints each page's items, one line "page JSON" a page, and stops after
 * PAGES pages when given (the callback's 1); exit 1 with the library's
 * message when the call fails.
 */
#include <stdio.h>
#include <stdlib.h>

#include "stageload.h"

struct count {
	int pages, stop_after;
};

static int
each(const char *items_json, void *arg)
{
	struct count *n = arg;

	printf("page %s\n", items_json);
	return ++n->pages == n->stop_after;
}

int
main(int argc, char **argv)
{
	struct count n = {0, argc > 5 ? atoi(argv[5]) : -1};
	sl_client *c;

	if (argc < 5) {
		fprintf(stderr, "usage: sl_pages SOCKET METHOD PARAMS ITEMS "
		                "[PAGES]\n");
		return 2;
	}
	if ((c = sl_client_new()) == NULL || sl_connect(c, argv[1]) < 0 ||
	    sl_call_pages(c, argv[2], argv[3], argv[4], each, &n) < 0) {
		fprintf(stderr, "sl_pages: %s\n",
		        c != NULL ? sl_errmsg(c) : "out of memory");
		sl_client_free(c);
		return 1;
	}
	sl_client_free(c);
	return 0;
}
