/*
 * simhash64.c — the simhash64 type: text and binary I/O, casts, and the
 * support functions of its btree and hash operator classes.
 *
 * The value is an unsigned 64-bit integer.  Everything here treats it as
 * unsigned: ordering, text output, the hex helper.  Casts to and from bigint
 * are bit-for-bit (declared WITHOUT FUNCTION in SQL), so existing bigint
 * fingerprint columns convert losslessly in both directions.
 */
#include "type/simhash64.h"

#include <ctype.h>
#include <inttypes.h>

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/sortsupport.h"
#include "utils/syscache.h"
#include "utils/varbit.h"

/* ---------- text I/O ---------- */

static inline int
hex_digit_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Accepts unsigned decimal (0 .. 18446744073709551615) or 0x followed by 1 to
 * 16 hex digits, with optional surrounding white space.  No sign, ever: a
 * fingerprint is a bit pattern and "-1" is far more likely a bug than intent.
 */
PG_FUNCTION_INFO_V1(simhash64_in);
Datum
simhash64_in(PG_FUNCTION_ARGS)
{
	const char *str = PG_GETARG_CSTRING(0);
	const unsigned char *p = (const unsigned char *) str;
	uint64		value = 0;
	int			ndigits = 0;
	bool		overflow = false;

	while (isspace(*p))
		p++;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
	{
		int			d;

		for (p += 2; (d = hex_digit_value(*p)) >= 0; p++, ndigits++)
			value = (value << 4) | (uint64) d;
		if (ndigits > 16)
			ndigits = 0;		/* too long: reject as malformed below */
	}
	else
	{
		for (; *p >= '0' && *p <= '9'; p++, ndigits++)
		{
			uint64		d = *p - '0';

			if (value > (PG_UINT64_MAX - d) / 10)
				overflow = true;
			value = value * 10 + d;
		}
	}

	while (isspace(*p))
		p++;

	if (ndigits == 0 || *p != '\0')
		simhash_input_error(fcinfo,
							errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
							errmsg("invalid input syntax for type %s: \"%s\"",
								   "simhash64", str),
							errhint("Use an unsigned decimal integer or 0x followed by 1 to 16 hex digits."));
	if (overflow)
		simhash_input_error(fcinfo,
							errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							errmsg("value \"%s\" is out of range for type %s",
								   str, "simhash64"),
							errdetail("The largest simhash64 is 18446744073709551615."));

	PG_RETURN_SIMHASH64(value);
}

PG_FUNCTION_INFO_V1(simhash64_out);
Datum
simhash64_out(PG_FUNCTION_ARGS)
{
	simhash64	value = PG_GETARG_SIMHASH64(0);
	char	   *buf = palloc(21);	/* 20 digits + NUL */

	snprintf(buf, 21, UINT64_FORMAT, value);
	PG_RETURN_CSTRING(buf);
}

/* ---------- binary I/O: 8 bytes, network byte order ---------- */

PG_FUNCTION_INFO_V1(simhash64_recv);
Datum
simhash64_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);

	PG_RETURN_SIMHASH64((simhash64) pq_getmsgint64(buf));
}

PG_FUNCTION_INFO_V1(simhash64_send);
Datum
simhash64_send(PG_FUNCTION_ARGS)
{
	simhash64	value = PG_GETARG_SIMHASH64(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) value);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* ---------- casts and helpers ---------- */

PG_FUNCTION_INFO_V1(simhash64_to_hex);
Datum
simhash64_to_hex(PG_FUNCTION_ARGS)
{
	simhash64	value = PG_GETARG_SIMHASH64(0);
	char		buf[19];		/* "0x" + 16 digits + NUL */

	snprintf(buf, sizeof(buf), "0x%016" PRIx64, (uint64_t) value);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

PG_FUNCTION_INFO_V1(simhash64_to_bytea);
Datum
simhash64_to_bytea(PG_FUNCTION_ARGS)
{
	simhash64	value = PG_GETARG_SIMHASH64(0);
	bytea	   *result = palloc(VARHDRSZ + 8);
	unsigned char *out = (unsigned char *) VARDATA(result);

	SET_VARSIZE(result, VARHDRSZ + 8);
	for (int i = 0; i < 8; i++)
		out[i] = (unsigned char) (value >> (56 - 8 * i));
	PG_RETURN_BYTEA_P(result);
}

PG_FUNCTION_INFO_V1(bytea_to_simhash64);
Datum
bytea_to_simhash64(PG_FUNCTION_ARGS)
{
	bytea	   *input = PG_GETARG_BYTEA_PP(0);
	const unsigned char *in = (const unsigned char *) VARDATA_ANY(input);
	int			len = VARSIZE_ANY_EXHDR(input);
	simhash64	value = 0;

	if (len != 8)
		ereport(ERROR,
				errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
				errmsg("cannot cast bytea of length %d to simhash64", len),
				errdetail("A simhash64 is exactly 8 bytes, most significant byte first."));
	for (int i = 0; i < 8; i++)
		value = (value << 8) | in[i];
	PG_RETURN_SIMHASH64(value);
}

/* bit(64): the most significant bit first, as bigint::bit(64) does. */
PG_FUNCTION_INFO_V1(simhash64_to_bit);
Datum
simhash64_to_bit(PG_FUNCTION_ARGS)
{
	simhash64	value = PG_GETARG_SIMHASH64(0);
	VarBit	   *result = palloc0(VARBITTOTALLEN(SIMHASH64_BITS));
	bits8	   *out = VARBITS(result);

	SET_VARSIZE(result, VARBITTOTALLEN(SIMHASH64_BITS));
	VARBITLEN(result) = SIMHASH64_BITS;
	for (int i = 0; i < 8; i++)
		out[i] = (bits8) (value >> (56 - 8 * i));
	PG_RETURN_VARBIT_P(result);
}

PG_FUNCTION_INFO_V1(bit_to_simhash64);
Datum
bit_to_simhash64(PG_FUNCTION_ARGS)
{
	VarBit	   *input = PG_GETARG_VARBIT_P(0);
	const bits8 *in = VARBITS(input);
	simhash64	value = 0;

	if (VARBITLEN(input) != SIMHASH64_BITS)
		ereport(ERROR,
				errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
				errmsg("cannot cast bit string of length %d to simhash64",
					   VARBITLEN(input)),
				errdetail("A simhash64 is exactly 64 bits."));
	for (int i = 0; i < 8; i++)
		value = (value << 8) | in[i];
	PG_RETURN_SIMHASH64(value);
}

/*
 * smallint and integer: the 64 bits of the same value as a bigint (sign
 * extended), so every SQL integer type reads as the bigint cast reads it and
 * a value never depends on which integer type a driver chose to send it as.
 */
PG_FUNCTION_INFO_V1(int2_to_simhash64);
Datum
int2_to_simhash64(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH64((simhash64) (int64) PG_GETARG_INT16(0));
}

PG_FUNCTION_INFO_V1(int4_to_simhash64);
Datum
int4_to_simhash64(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH64((simhash64) (int64) PG_GETARG_INT32(0));
}

/*
 * numeric: the exact unsigned value, an integer from 0 to 2^64 - 1.  Drivers
 * send integers from 2^63 on as numeric (they do not fit bigint), and SQL
 * parses such a literal as numeric; a fraction, a negative value, NaN or an
 * infinity is a mistake, never rounded or wrapped.
 */
static Numeric
numeric_of_uint64(uint64 value)
{
	Numeric		high = int64_to_numeric((int64) (value >> 1));
	Numeric		twice = DatumGetNumeric(DirectFunctionCall2(numeric_add, NumericGetDatum(high),
															NumericGetDatum(high)));

	return DatumGetNumeric(DirectFunctionCall2(numeric_add, NumericGetDatum(twice),
											   NumericGetDatum(int64_to_numeric(value & 1))));
}

static int
numeric_compare(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(a), NumericGetDatum(b)));
}

static bool
numeric_is_integral(Numeric num)
{
	Datum		truncated = DirectFunctionCall2(numeric_trunc, NumericGetDatum(num), Int32GetDatum(0));

	return numeric_compare(DatumGetNumeric(truncated), num) == 0;
}

PG_FUNCTION_INFO_V1(numeric_to_simhash64);
Datum
numeric_to_simhash64(PG_FUNCTION_ARGS)
{
	Numeric		num = PG_GETARG_NUMERIC(0);
	Numeric		half = numeric_of_uint64(UINT64CONST(1) << 63);
	Numeric		low;
	simhash64	offset = 0;

	if (numeric_is_nan(num) || numeric_is_inf(num) || !numeric_is_integral(num) ||
		numeric_compare(num, int64_to_numeric(0)) < 0 ||
		numeric_compare(num, numeric_of_uint64(PG_UINT64_MAX)) > 0)
		ereport(ERROR,
				errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				errmsg("numeric value %s is out of range for type simhash64",
					   DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(num)))),
				errdetail("A simhash64 is an integer from 0 to 18446744073709551615."));

	/* bigint holds the lower half; the upper half is 2^63 plus a bigint */
	low = num;
	if (numeric_compare(num, half) >= 0)
	{
		low = DatumGetNumeric(DirectFunctionCall2(numeric_sub, NumericGetDatum(num),
												  NumericGetDatum(half)));
		offset = UINT64CONST(1) << 63;
	}
	PG_RETURN_SIMHASH64(offset + (simhash64) DatumGetInt64(DirectFunctionCall1(numeric_int8,
																			   NumericGetDatum(low))));
}

/* ---------- btree support: unsigned ordering ---------- */

static inline int
simhash64_cmp_internal(simhash64 a, simhash64 b)
{
	return (a > b) - (a < b);
}

#define SIMHASH64_COMPARISON(name, op) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	PG_RETURN_BOOL(PG_GETARG_SIMHASH64(0) op PG_GETARG_SIMHASH64(1)); \
}

SIMHASH64_COMPARISON(simhash64_eq, ==)
SIMHASH64_COMPARISON(simhash64_ne, !=)
SIMHASH64_COMPARISON(simhash64_lt, <)
SIMHASH64_COMPARISON(simhash64_le, <=)
SIMHASH64_COMPARISON(simhash64_gt, >)
SIMHASH64_COMPARISON(simhash64_ge, >=)

PG_FUNCTION_INFO_V1(simhash64_cmp);
Datum
simhash64_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash64_cmp_internal(PG_GETARG_SIMHASH64(0),
										   PG_GETARG_SIMHASH64(1)));
}

static int
simhash64_fastcmp(Datum x, Datum y, SortSupport ssup)
{
	return simhash64_cmp_internal(DatumGetSimhash64(x), DatumGetSimhash64(y));
}

/* Sorting without an fmgr call per comparison: ORDER BY, merge joins, CREATE INDEX. */
PG_FUNCTION_INFO_V1(simhash64_sortsupport);
Datum
simhash64_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = simhash64_fastcmp;
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(simhash64_larger);
Datum
simhash64_larger(PG_FUNCTION_ARGS)
{
	simhash64	a = PG_GETARG_SIMHASH64(0);
	simhash64	b = PG_GETARG_SIMHASH64(1);

	PG_RETURN_SIMHASH64(a > b ? a : b);
}

PG_FUNCTION_INFO_V1(simhash64_smaller);
Datum
simhash64_smaller(PG_FUNCTION_ARGS)
{
	simhash64	a = PG_GETARG_SIMHASH64(0);
	simhash64	b = PG_GETARG_SIMHASH64(1);

	PG_RETURN_SIMHASH64(a < b ? a : b);
}

/* ---------- hash support ---------- */

/*
 * Same as hashint8(), so a simhash64 hashes like the bigint with the same
 * bits: hash joins and hash partitions agree with the binary-coercible cast.
 */
PG_FUNCTION_INFO_V1(simhash64_hash);
Datum
simhash64_hash(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(hashint8, PG_GETARG_DATUM(0));
}

PG_FUNCTION_INFO_V1(simhash64_hash_extended);
Datum
simhash64_hash_extended(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall2(hashint8extended, PG_GETARG_DATUM(0),
							   PG_GETARG_DATUM(1));
}

Oid
simhash_extension_type(Oid function, const char *type_name)
{
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum(type_name),
						   ObjectIdGetDatum(get_func_namespace(function)));
}

Oid
simhash_type_oid(FunctionCallInfo fcinfo)
{
	Oid			type = simhash_extension_type(fcinfo->flinfo->fn_oid, "simhash64");

	/* Its owner can rename it: a user error, not an internal one. */
	if (!OidIsValid(type))
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("type simhash64 not found in schema %s, where the simhash extension is",
					   get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))));
	return type;
}
