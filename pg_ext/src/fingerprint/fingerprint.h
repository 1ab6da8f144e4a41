/*
 * fingerprint.h — the SQL layer over the fingerprint core (core/text.h):
 * the text argument as UTF-8, the core's host (palloc, CHECK_FOR_INTERRUPTS),
 * its status codes as errors, and the SQL arrays of tokens and features.
 */
#ifndef SIMHASH_FINGERPRINT_H
#define SIMHASH_FINGERPRINT_H

#include "simhash.h"

#include "core/text.h"

/* The core's host: memory in the current memory context, CHECK_FOR_INTERRUPTS (from _PG_init). */
extern void simhash_fingerprint_init(void);

/* The text argument as UTF-8 bytes (converted from the database encoding). */
extern const char *text_arg_utf8(FunctionCallInfo fcinfo, int argno, int *len);

/* A status of the core other than SIMHASH_OK as an error, with its SQLSTATE. */
extern void report_core_status(SimhashStatus status);

/* The fingerprint of the text argument 0 by a version's function of the core (core/text.h). */
typedef SimhashStatus (*TextFingerprintFunction) (const char *text, size_t len, uint64_t *result);
extern Datum text_fingerprint_datum(FunctionCallInfo fcinfo, TextFingerprintFunction fingerprint);

/* The features of the text argument 0 as a text[], in the server encoding. */
extern Datum features_array(FunctionCallInfo fcinfo, FeatureWalk walk, int32 size);

#endif							/* SIMHASH_FINGERPRINT_H */
