/*
 * simhash64.h — the simhash64 type as the catalogs know it (simhash64.c):
 * its OID, and those of the extension's other types, found at run time.
 * The type in C (a Datum of 64 bits) is simhash.h's.
 */
#ifndef SIMHASH_SIMHASH64_H
#define SIMHASH_SIMHASH64_H

#include "simhash.h"

/*
 * The OID of one of the extension's types, found by name in the schema of
 * one of its functions (where CREATE EXTENSION put both); InvalidOid when
 * its owner renamed or dropped it.
 */
extern Oid	simhash_extension_type(Oid function, const char *type_name);

/* The type simhash64 of the extension that fcinfo's function belongs to; ERROR if gone. */
extern Oid	simhash_type_oid(FunctionCallInfo fcinfo);

#endif							/* SIMHASH_SIMHASH64_H */
