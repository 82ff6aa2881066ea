/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CONVFS_PQ_LOAD_H
#define CONVFS_PQ_LOAD_H

/*
 * PostgreSQL's client library, loaded (dlopen) the first time a sync needs
 * it, not when convfs starts: it and what it links (Kerberos, LDAP, TLS)
 * are half of the libraries convfs would load, and loading them took about
 * 10 ms of every start, a `convfs search` and a mount included, that only
 * -o sync uses. sync_pg.c is the one caller of PQ*(): through this header
 * its calls go through the table below, with libpq-fe.h's own types.
 */

#include <libpq-fe.h>

#define PQ_FUNCTIONS(X) \
	X(PQclear) X(PQconnectdb) X(PQconnectdbParams) X(PQconninfoFree) X(PQconninfoParse) \
	X(PQconsumeInput) X(PQerrorMessage) X(PQexec) X(PQexecParams) X(PQfinish) X(PQfreemem) \
	X(PQgetlength) X(PQgetvalue) X(PQnotifies) X(PQntuples) X(PQresultErrorField) \
	X(PQresultErrorMessage) X(PQresultStatus) X(PQsetNoticeProcessor) X(PQsocket) X(PQstatus)

struct pq_functions {
#define PQ_MEMBER(name) __typeof__(name) *fn_##name;
	PQ_FUNCTIONS(PQ_MEMBER)
#undef PQ_MEMBER
};

extern struct pq_functions pq_fn;

/*
 * Loads libpq once (later calls return what the first did): 0, or -ENOPKG
 * with one log line that says what is missing.
 */
int pq_load(void);

#define PQclear (pq_fn.fn_PQclear)
#define PQconnectdb (pq_fn.fn_PQconnectdb)
#define PQconnectdbParams (pq_fn.fn_PQconnectdbParams)
#define PQconninfoFree (pq_fn.fn_PQconninfoFree)
#define PQconninfoParse (pq_fn.fn_PQconninfoParse)
#define PQconsumeInput (pq_fn.fn_PQconsumeInput)
#define PQerrorMessage (pq_fn.fn_PQerrorMessage)
#define PQexec (pq_fn.fn_PQexec)
#define PQexecParams (pq_fn.fn_PQexecParams)
#define PQfinish (pq_fn.fn_PQfinish)
#define PQfreemem (pq_fn.fn_PQfreemem)
#define PQgetlength (pq_fn.fn_PQgetlength)
#define PQgetvalue (pq_fn.fn_PQgetvalue)
#define PQnotifies (pq_fn.fn_PQnotifies)
#define PQntuples (pq_fn.fn_PQntuples)
#define PQresultErrorField (pq_fn.fn_PQresultErrorField)
#define PQresultErrorMessage (pq_fn.fn_PQresultErrorMessage)
#define PQresultStatus (pq_fn.fn_PQresultStatus)
#define PQsetNoticeProcessor (pq_fn.fn_PQsetNoticeProcessor)
#define PQsocket (pq_fn.fn_PQsocket)
#define PQstatus (pq_fn.fn_PQstatus)

#endif
