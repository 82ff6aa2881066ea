/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pq_load.c: libpq, loaded when a sync first needs it (pq_load.h says why).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "store/pq_load.h"
#include "store/util.h"

/* libpq's soname, the same since PostgreSQL 8.0 (Debian's package libpq5). */
#define PQ_SONAME "libpq.so.5"

struct pq_functions pq_fn;

static pthread_once_t pq_once = PTHREAD_ONCE_INIT;
static int pq_loaded; /* 0, or -ENOPKG: what pq_load() returns */

static void pq_load_once(void)
{
	void *h = dlopen(PQ_SONAME, RTLD_NOW | RTLD_LOCAL);
	void *f;

	if (!h) {
		log_err("sync: cannot load PostgreSQL's client library: %s (Debian's package libpq5 has it)", dlerror());
		pq_loaded = -ENOPKG;
		return;
	}
#define PQ_RESOLVE(name)                                                                                       \
	if (!(f = dlsym(h, #name))) {                                                                          \
		log_err("sync: PostgreSQL's client library " PQ_SONAME " has no " #name ": %s", dlerror());   \
		pq_loaded = -ENOPKG;                                                                           \
		return;                                                                                        \
	}                                                                                                      \
	*(void **)&pq_fn.fn_##name = f;
	PQ_FUNCTIONS(PQ_RESOLVE)
#undef PQ_RESOLVE
	/* h stays open: the functions are used until the process ends. */
}

int pq_load(void)
{
	int r = pthread_once(&pq_once, pq_load_once);

	if (r != 0) {
		log_err("sync: cannot load PostgreSQL's client library: %s", strerror(r));
		return -r;
	}
	return pq_loaded;
}
