/*
 * text_v2.c — the text fingerprint version 2 of docs/fingerprint-spec.md §6:
 * every code point normalised through one generated table (unicode_tables.h:
 * NFKD, full case folding, marks and format characters dropped), tokens of
 * word characters, a token of each character of the scripts written without
 * spaces; features of two parts, token shingles and character n-grams, each
 * voting with its weight; XXH3-64 and the vote of §1.
 *
 * As in version 1 (text_v1.c), one pass writes the normalised tokens
 * joined by single spaces into a buffer, and a feature is hashed in place: a
 * shingle is the slice from its first token's start to its last token's end,
 * an n-gram the slice of its n characters.  Only what the next feature needs
 * is kept: the buffer is compacted when full, so it stays small whatever the
 * text's length.  ASCII, the bulk of most text, goes through a 128-byte table
 * derived from the Unicode tables at load, and for the fingerprint through
 * ascii_run_voting: runs of it written 8 bytes at once, their n-grams hashed
 * without reading memory back (8 at a time with AVX-512, 4 with AVX2) and
 * voted in vectors.
 */
#include "core/text_walk.h"

#include "core/unicode_tables.h"

/* XXH3 hashes an input of 4 to 8 bytes by one formula: ASCII n-grams are hashed in registers. */
#define V2_CHAR_GRAM_IN_REGISTER (V2_CHAR_GRAM >= 4 && V2_CHAR_GRAM <= 8)

/* Hangul syllables, decomposed algorithmically (Unicode §3.12). */
#define HANGUL_FIRST 0xAC00
#define HANGUL_COUNT 11172
#define HANGUL_L_FIRST 0x1100
#define HANGUL_V_FIRST 0x1161
#define HANGUL_T_BEFORE 0x11A7
#define HANGUL_V_COUNT 21
#define HANGUL_T_COUNT 28

/* The start offsets in the buffer of the last RECENT_TOKENS tokens, RECENT_CHARS characters. */
#define RECENT_TOKENS 8			/* powers of two, at least the sizes of the parts */
#define RECENT_CHARS 16

/*
 * Bytes read from the input between two checks for room in the buffer: also
 * the most ascii_run_voting takes at once, which pays its fixed costs once a
 * run (1024: a fifth faster on English than 256; its token ends, 8 kB of
 * stack).
 */
#define ASCII_RUN 1024
/* The most bytes one character adds to the buffer: each character it becomes, with a space. */
#define MAX_CHAR_OUTPUT (UNICODE_MAX_MAPPING * 5)
#define INITIAL_BUFFER 8192

/*
 * ascii_token_byte[c]: c (< 0x80) as written into a token (A-Z lowered), or 0
 * where c separates tokens.  Filled from the Unicode tables at load, so the
 * fast path cannot disagree with them.
 */
static char ascii_token_byte[128];
/* Whether those are the ASCII letters, lowered (digits separate: write_ascii_word8 assumes it). */
static bool ascii_word8_ok = false;


typedef struct TokenWriter
{
	char	   *norm;			/* the tokens, joined by single spaces */
	size_t		pos;			/* bytes written into norm */
	size_t		cap;			/* norm's size */
	size_t		recent[RECENT_TOKENS];	/* start of token j at [j % RECENT_TOKENS] */
	int64_t		ntokens;		/* tokens finished */
	bool		open;			/* a token is being written */
	size_t		recent_chars[RECENT_CHARS]; /* start of character j at [j % RECENT_CHARS] */
	int64_t		nchars;			/* characters written (the joining spaces too) */
	int64_t		ascii_tail;		/* how many of the last characters written are ASCII */
	/* With parts->digits only (version 3): */
	bool		open_digit;		/* the open token is a number */
	bool		last_solo;		/* the last character (not dropped) was SOLO */
	int64_t		digit_end;		/* 1 + the index of the last digit character (0: none) */
	int64_t		last_number;	/* 1 + the index of the last number token (0: none) */
	TextCounts	counts;
} TokenWriter;

static inline uint32_t
unicode_value(uint32_t c)
{
	uint32_t		block = unicode_stage1[c >> UNICODE_BLOCK_SHIFT];

	return unicode_stage2[(block << UNICODE_BLOCK_SHIFT) | (c & UNICODE_BLOCK_MASK)];
}

void
text_v2_init(void)
{
	for (uint32_t c = 0; c < 128; c++)
	{
		uint32_t		value = unicode_value(c);
		uint32_t		out = c;

		if (value >= UNICODE_MAPPED)
		{
			uint32_t		m = value - UNICODE_MAPPED;

			/* ASCII letters fold to one ASCII letter; nothing else in ASCII maps. */
			SH_ASSERT(unicode_mapping_offsets[m + 1] - unicode_mapping_offsets[m] == 1);
			out = unicode_pool[unicode_mapping_offsets[m]] & 0xFFFFFF;
			value = unicode_pool[unicode_mapping_offsets[m]] >> 24;
		}
		SH_ASSERT(value == UNICODE_WORD || value == UNICODE_SEPARATOR);
		ascii_token_byte[c] = value == UNICODE_WORD ? (char) out : 0;
	}
	/* The tables' ASCII words are the letters, lowered (numbers separate): write_ascii_word8's. */
	ascii_word8_ok = true;
	for (uint32_t c = 0; c < 128; c++)
	{
		bool		upper = c >= 'A' && c <= 'Z';
		bool		letter = upper || (c >= 'a' && c <= 'z');

		if (ascii_token_byte[c] != (letter ? (char) (upper ? c + 'a' - 'A' : c) : 0))
			ascii_word8_ok = false;
	}
}

/*
 * Makes room for `need` more bytes: first by dropping the tokens no shingle
 * will need again, then by growing the buffer.
 */
/* The features the parts hold back (pointers into the buffer) are handled. */
static inline void
settle_parts(TokenWriter *w, const FeatureParts *parts)
{
	(void) w;
	if (parts->settle != NULL)
	{
		parts->settle(parts->token_arg);
		parts->settle(parts->char_arg);
	}
}

static bool
make_room(TokenWriter *w, const FeatureParts *parts, size_t need)
{
	int32_t		token_size = SH_MAX(parts->token_size, 1);
	int32_t		char_size = SH_MAX(parts->char_size, 1);
	int64_t		keep_token = SH_MAX(0, w->ntokens - (token_size - 1));
	int64_t		keep_char = SH_MAX(0, w->nchars - (char_size - 1));
	size_t		keep_from = w->pos;

	/* The last token_size - 1 finished tokens, and the open one. */
	if (keep_token < w->ntokens || w->open)
		keep_from = w->recent[keep_token % RECENT_TOKENS];
	/* The last char_size - 1 characters. */
	if (keep_char < w->nchars)
		keep_from = SH_MIN(keep_from, w->recent_chars[keep_char % RECENT_CHARS]);
	/* Fewer tokens or characters than a feature: the one feature needs them all. */
	if (w->ntokens + w->open < parts->token_size || w->nchars < parts->char_size)
		keep_from = 0;
	settle_parts(w, parts);
	if (keep_from > 0)
	{
		memmove(w->norm, w->norm + keep_from, w->pos - keep_from);
		w->pos -= keep_from;
		for (int64_t j = keep_token; j < w->ntokens + w->open; j++)
			w->recent[j % RECENT_TOKENS] -= keep_from;
		for (int64_t j = keep_char; j < w->nchars; j++)
			w->recent_chars[j % RECENT_CHARS] -= keep_from;
	}
	if (w->cap - w->pos < need)
	{
		size_t		cap = w->cap;
		char	   *norm;

		while (cap - w->pos < need || cap < 2 * w->pos)
			cap *= 2;
		norm = simhash_core_host.realloc(w->norm, cap);
		if (norm == NULL)
			return false;
		w->norm = norm;
		w->cap = cap;
	}
	return true;
}

/*
 * The fingerprint's parts (parts->vote_ascii): a feature goes straight to its
 * part (below, with PartVotes), with version 3's digits (parts->digits) with
 * whether it has one (spec §8.4), which the writer tells at once from its
 * last digit and number.
 */
typedef struct PartVotes PartVotes;
static SH_ALWAYS_INLINE void part_feature_with(const char *data, size_t len, PartVotes *part,
											   bool digits, bool digit);

/* Whether the n-gram of the last V2_CHAR_GRAM characters (all, if fewer) has a digit (spec §8.4). */
static SH_ALWAYS_INLINE bool
char_gram_has_digit(const TokenWriter *w)
{
	return w->digit_end > SH_MAX(0, w->nchars - V2_CHAR_GRAM);
}

/* Whether the shingle of the last V2_TOKEN_SHINGLE tokens (all, if fewer) has a number. */
static SH_ALWAYS_INLINE bool
shingle_has_digit(const TokenWriter *w)
{
	return w->last_number > SH_MAX(0, w->ntokens - V2_TOKEN_SHINGLE);
}

/* A feature of data is emitted to the part of arg and emit (digit: with parts->digits, it has one). */
static SH_ALWAYS_INLINE void
emit_feature(const FeatureParts *parts, void *arg, FeatureCallback emit, bool digit,
			 const char *data, size_t len)
{
	if (parts->vote_ascii)
		part_feature_with(data, len, arg, parts->digits, digit);
	else
		emit(data, len, arg);
}

/* A character was written at start: the n-gram it ends, if any. */
static SH_ALWAYS_INLINE void
char_written(TokenWriter *w, const FeatureParts *parts, size_t start)
{
	int32_t		n = parts->char_size;

	if (n == 0)
		return;
	w->recent_chars[w->nchars % RECENT_CHARS] = start;
	w->nchars++;
	if (w->nchars >= n)
	{
		size_t		first = w->recent_chars[(w->nchars - n) % RECENT_CHARS];

		emit_feature(parts, parts->char_arg, parts->emit_char, parts->digits && char_gram_has_digit(w),
					 w->norm + first, w->pos - first);
	}
}

/* Writes one ASCII character b (ascii_tail is for ascii_run_voting). */
static SH_ALWAYS_INLINE void
write_ascii(TokenWriter *w, const FeatureParts *parts, char b)
{
	w->norm[w->pos++] = b;
	w->ascii_tail++;
	char_written(w, parts, w->pos - 1);
}

static SH_ALWAYS_INLINE void
begin_token(TokenWriter *w, const FeatureParts *parts)
{
	if (w->ntokens > 0)
		write_ascii(w, parts, ' ');
	w->recent[w->ntokens % RECENT_TOKENS] = w->pos;
	w->open = true;
}

static SH_ALWAYS_INLINE void
end_token(TokenWriter *w, const FeatureParts *parts)
{
	int32_t		n = parts->token_size;

	w->open = false;
	w->ntokens++;
	if (n > 0 && w->ntokens >= n)
	{
		size_t		first = w->recent[(w->ntokens - n) % RECENT_TOKENS];

		emit_feature(parts, parts->token_arg, parts->emit_token, parts->digits && shingle_has_digit(w),
					 w->norm + first, w->pos - first);
	}
}

static SH_ALWAYS_INLINE void
write_utf8(TokenWriter *w, const FeatureParts *parts, uint32_t c)
{
	size_t		start = w->pos;
	unsigned char *out = (unsigned char *) w->norm + w->pos;

	if (c < 0x80)
	{
		write_ascii(w, parts, (char) c);
		return;
	}
	w->ascii_tail = 0;
	if (c < 0x800)
	{
		out[0] = 0xC0 | (c >> 6);
		out[1] = 0x80 | (c & 0x3F);
		w->pos += 2;
	}
	else if (c < 0x10000)
	{
		out[0] = 0xE0 | (c >> 12);
		out[1] = 0x80 | ((c >> 6) & 0x3F);
		out[2] = 0x80 | (c & 0x3F);
		w->pos += 3;
	}
	else
	{
		out[0] = 0xF0 | (c >> 18);
		out[1] = 0x80 | ((c >> 12) & 0x3F);
		out[2] = 0x80 | ((c >> 6) & 0x3F);
		out[3] = 0x80 | (c & 0x3F);
		w->pos += 4;
	}
	char_written(w, parts, start);
}

/* A digit 0-9 with parts->digits (spec §8.2): a number is a token of its own. */
static SH_ALWAYS_INLINE void
put_digit(TokenWriter *w, const FeatureParts *parts, uint32_t c)
{
	if (w->open && !w->open_digit)
		end_token(w, parts);
	if (!w->open)
	{
		begin_token(w, parts);
		w->open_digit = true;
		w->counts.numbers++;
		w->last_number = w->ntokens + 1;
	}
	/* Before the n-gram it ends is emitted. */
	w->digit_end = w->nchars + 1;
	write_ascii(w, parts, (char) c);
}

/*
 * One normalised character c of the given kind (spec §6.3; with
 * parts->digits, §8.2: digits 0-9, SEPARATOR in the tables, make numbers).
 */
static SH_ALWAYS_INLINE void
put_char(TokenWriter *w, const FeatureParts *parts, uint32_t c, uint32_t kind)
{
	switch (kind)
	{
		case UNICODE_WORD:
			if (parts->digits && w->open && w->open_digit)
				end_token(w, parts);
			if (!w->open)
			{
				begin_token(w, parts);
				if (parts->digits)
					w->open_digit = false;
			}
			write_utf8(w, parts, c);
			if (parts->digits)
				w->last_solo = false;
			break;
		case UNICODE_SOLO:
			if (w->open)
				end_token(w, parts);
			begin_token(w, parts);
			write_utf8(w, parts, c);
			end_token(w, parts);
			if (parts->digits)
			{
				w->counts.solo_following += w->last_solo;
				w->last_solo = true;
			}
			break;
		case UNICODE_SEPARATOR:
			if (parts->digits)
			{
				w->last_solo = false;
				if (c - '0' < 10)
				{
					put_digit(w, parts, c);
					break;
				}
			}
			if (w->open)
				end_token(w, parts);
			break;
		default:				/* UNICODE_DROP */
			break;
	}
}

/* A code point of the input, normalised (spec §6.2). */
static SH_ALWAYS_INLINE void
put_code_point(TokenWriter *w, const FeatureParts *parts, uint32_t c)
{
	uint32_t		value;

	if (c - HANGUL_FIRST < HANGUL_COUNT)
	{
		uint32_t		s = c - HANGUL_FIRST;
		uint32_t		t = s % HANGUL_T_COUNT;

		put_char(w, parts, HANGUL_L_FIRST + s / (HANGUL_V_COUNT * HANGUL_T_COUNT), UNICODE_WORD);
		put_char(w, parts, HANGUL_V_FIRST + s % (HANGUL_V_COUNT * HANGUL_T_COUNT) / HANGUL_T_COUNT,
				 UNICODE_WORD);
		if (t != 0)
			put_char(w, parts, HANGUL_T_BEFORE + t, UNICODE_WORD);
		return;
	}
	value = unicode_value(c);
	if (value < UNICODE_MAPPED)
		put_char(w, parts, c, value);
	else
	{
		uint32_t		m = value - UNICODE_MAPPED;

		for (uint32_t k = unicode_mapping_offsets[m]; k < unicode_mapping_offsets[m + 1]; k++)
			put_char(w, parts, unicode_pool[k] & 0xFFFFFF, unicode_pool[k] >> 24);
	}
}

static inline bool
is_continuation(unsigned char b)
{
	return (b & 0xC0) == 0x80;
}

/*
 * Decodes the character at in[*i] (a byte >= 0x80) and advances *i past it.
 * Returns -1, advancing one byte, where the bytes are not well-formed UTF-8
 * (Unicode Table 3-7: no overlong forms, surrogates or values past U+10FFFF):
 * the spec reads each such byte as a separator.
 */
static inline int32_t
decode_utf8(const unsigned char *in, size_t len, size_t *i)
{
	size_t		at = *i;
	unsigned char b = in[at];
	size_t		n;
	uint32_t		c,
				min;

	if (b >= 0xC2 && b <= 0xDF)
		n = 1, c = b & 0x1F, min = 0x80;
	else if (b >= 0xE0 && b <= 0xEF)
		n = 2, c = b & 0x0F, min = 0x800;
	else if (b >= 0xF0 && b <= 0xF4)
		n = 3, c = b & 0x07, min = 0x10000;
	else
	{
		*i = at + 1;
		return -1;
	}
	if (len - at <= n)
	{
		*i = at + 1;
		return -1;
	}
	for (size_t k = 1; k <= n; k++)
	{
		if (!is_continuation(in[at + k]))
		{
			*i = at + 1;
			return -1;
		}
		c = (c << 6) | (in[at + k] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
	{
		*i = at + 1;
		return -1;
	}
	*i = at + 1 + n;
	return (int32_t) c;
}

/*
 * The features of one part that vote: each is hashed, the runs rule applied,
 * and the hash voted into batch or, without one, the feature handed on to
 * emit.  Voted features are hashed PENDING_FEATURES at a time, a little after
 * they were written: a feature read back at once from the bytes just stored
 * one by one stalls the CPU (no store-to-load forwarding), which costs more
 * than hashing it.
 */
#define PENDING_FEATURES 64

struct PartVotes
{
	uint64_t		last;			/* the hash of the part's feature just before */
	bool		any;			/* there was one */
	HashBatch  *batch;
	/* Version 3's (or NULL): the features with a digit 0-9 (char_gram_has_digit). */
	HashBatch  *digit_batch;
	FeatureCallback emit;
	void	   *arg;
	int			npending;
	const char *pending_data[PENDING_FEATURES];
	size_t		pending_len[PENDING_FEATURES];
	bool		pending_digit[PENDING_FEATURES];
};

/* Whether a feature of this hash votes (the runs rule), remembering it. */
static SH_ALWAYS_INLINE bool
part_votes(PartVotes *part, uint64_t hash)
{
	if (V2_RUNS_ONCE && part->any && hash == part->last)
		return false;
	part->any = true;
	part->last = hash;
	return true;
}

/*
 * The pending features are hashed and voted; with digits (version 3's parts,
 * a digit_batch), each into the batch its pending_digit says.
 */
static SH_ALWAYS_INLINE void
settle_part_with(PartVotes *part, bool digits)
{
	for (int k = 0; k < part->npending; k++)
	{
		uint64_t		hash = XXH3_64bits(part->pending_data[k], part->pending_len[k]);

		if (part_votes(part, hash))
			hash_batch_add(digits && part->pending_digit[k] ? part->digit_batch : part->batch, hash);
	}
	part->npending = 0;
}

/* FeatureParts settle functions: version 2's parts, and version 3's (with digits). */
static void
settle_part(void *arg)
{
	settle_part_with((PartVotes *) arg, false);
}

static void
settle_part_digits(void *arg)
{
	settle_part_with((PartVotes *) arg, true);
}

/*
 * A feature of a part: held back to be hashed, or hashed and handed on; with
 * digits, with whether it has a digit.  digits is a constant where it is
 * inlined (emit_feature), so version 2's walk pays nothing for version
 * 3's.
 */
static SH_ALWAYS_INLINE void
part_feature_with(const char *data, size_t len, PartVotes *part, bool digits, bool digit)
{
	if (part->batch != NULL)
	{
		part->pending_data[part->npending] = data;
		part->pending_len[part->npending] = len;
		if (digits)
			part->pending_digit[part->npending] = digit;
		if (++part->npending == PENDING_FEATURES)
			(digits ? settle_part_digits : settle_part) (part);
	}
	else if (part_votes(part, XXH3_64bits(data, len)))
		part->emit(data, len, part->arg);
}

static SH_ALWAYS_INLINE void
part_feature(const char *data, size_t len, void *arg)
{
	part_feature_with(data, len, (PartVotes *) arg, false, false);
}

/*
 * XXH3-64 (seed 0) of n-grams of n ASCII bytes, 4 <= n <= 8: XXH3's own
 * formula for inputs of that length (xxhash.h, XXH3_len_4to8_64b) on the
 * 64-bit value its two little-endian 32-bit reads make (gram_input); with
 * vote.h's copies, several at a time in the lanes of a vector: 8 with AVX-512
 * (a 64-bit multiply of its own), 4 with AVX2 (whose 64-bit multiply the
 * compiler makes of three 32-bit ones).  test_hashing_sql.py checks every
 * copy against Python's hashing.
 */
#define XXH3_SECRET_8_XOR_16 (UINT64_C(0x1cad21f72c81017c) ^ UINT64_C(0xdb979083e96dd4de))
#define XXH3_RRMXMX_PRIME UINT64_C(0x9FB21C651E98DF25)

/* h, an input of V2_CHAR_GRAM bytes (or a vector of them), becomes its XXH3-64. */
#define XXH3_4TO8(h) \
	do { \
		(h) ^= XXH3_SECRET_8_XOR_16; \
		(h) ^= (((h) << 49) | ((h) >> 15)) ^ (((h) << 24) | ((h) >> 40));	/* two rotations */ \
		(h) *= XXH3_RRMXMX_PRIME; \
		(h) ^= ((h) >> 35) + V2_CHAR_GRAM; \
		(h) *= XXH3_RRMXMX_PRIME; \
		(h) ^= (h) >> 28; \
	} while (0)

/* XXH3's input of the n bytes at p: the last 4 bytes, plus the first 4 above them. */
static SH_ALWAYS_INLINE uint64_t
gram_input(const char *p, int n)
{
	uint32_t		first;
	uint32_t		last;

	memcpy(&first, p, sizeof(first));
	memcpy(&last, p + n - 4, sizeof(last));
#ifdef SH_BIG_ENDIAN
	first = __builtin_bswap32(first);
	last = __builtin_bswap32(last);
#endif
	return last + ((uint64_t) first << 32);
}

/*
 * The vectors' inputs are picked from bytes read at once by one shuffle: lane
 * k's bytes are the 4 that end its n-gram, then the 4 it starts with
 * (little-endian lanes).  AVX-512 shuffles the 64 bytes it reads; AVX2's
 * shuffles stay within 16 bytes, so it reads 16 (4 n-grams of up to 8 bytes
 * lie in 11) into both halves of its vector.
 */
#if defined(HAVE_SIMD_COPIES) && defined(__has_builtin) && !defined(SH_BIG_ENDIAN)
#if __has_builtin(__builtin_shufflevector)
#define GRAM_VECTORS
#endif
#endif

#ifdef GRAM_VECTORS
#define GRAM_BYTE(k, t) ((t) < 4 ? (k) + V2_CHAR_GRAM - 4 + (t) : (k) + (t) - 4)
#define GRAM_LANE(k) GRAM_BYTE(k, 0), GRAM_BYTE(k, 1), GRAM_BYTE(k, 2), GRAM_BYTE(k, 3), \
	GRAM_BYTE(k, 4), GRAM_BYTE(k, 5), GRAM_BYTE(k, 6), GRAM_BYTE(k, 7)

typedef uint64_t GramLanes8 __attribute__((vector_size(8 * sizeof(uint64_t))));
typedef uint64_t GramLanes4 __attribute__((vector_size(4 * sizeof(uint64_t))));
typedef unsigned char GramBytes64 __attribute__((vector_size(64)));
typedef unsigned char GramBytes16 __attribute__((vector_size(16)));

/* The inputs of the n-grams starting at src[0 .. 8) (room for 64 bytes at src). */
static SH_ALWAYS_INLINE void
gram_inputs8(const char *src, GramLanes8 *inputs)
{
	GramBytes64 bytes;

	memcpy(&bytes, src, sizeof(bytes));
	*inputs = (GramLanes8) __builtin_shufflevector(bytes, bytes, GRAM_LANE(0), GRAM_LANE(1),
												   GRAM_LANE(2), GRAM_LANE(3), GRAM_LANE(4),
												   GRAM_LANE(5), GRAM_LANE(6), GRAM_LANE(7));
}

/* The inputs of the n-grams starting at src[0 .. 4) (room for 16 bytes at src). */
static SH_ALWAYS_INLINE void
gram_inputs4(const char *src, GramLanes4 *inputs)
{
	GramBytes16 bytes;

	_Static_assert(GRAM_BYTE(3, 3) < sizeof(bytes), "4 n-grams lie in 16 bytes");
	memcpy(&bytes, src, sizeof(bytes));
	*inputs = (GramLanes4) __builtin_shufflevector(bytes, bytes, GRAM_LANE(0), GRAM_LANE(1),
												   GRAM_LANE(2), GRAM_LANE(3));
}

/* Whether any lane of *lanes is not 0. */
static SH_ALWAYS_INLINE bool
any_lane8(const GramLanes8 *lanes)
{
	GramLanes8	t = *lanes;

	t |= __builtin_shufflevector(t, t, 4, 5, 6, 7, 0, 1, 2, 3);
	t |= __builtin_shufflevector(t, t, 2, 3, 0, 1, 6, 7, 4, 5);
	t |= __builtin_shufflevector(t, t, 1, 0, 3, 2, 5, 4, 7, 6);
	return t[0] != 0;
}

static SH_ALWAYS_INLINE bool
any_lane4(const GramLanes4 *lanes)
{
	GramLanes4	t = *lanes;

	t |= __builtin_shufflevector(t, t, 2, 3, 0, 1);
	t |= __builtin_shufflevector(t, t, 1, 0, 3, 2);
	return t[0] != 0;
}

/*
 * name(norm, j, to, hashes, &nbatch): the n-grams ending at norm[j, to),
 * nlanes at a time, hashed and put into hashes[*nbatch ...], all of them: the
 * caller keeps room, and the one ending at j - 1 is of the ASCII bytes before
 * (not the first of a run).  Returns to, or j, putting nothing, where the
 * runs rule drops some (the caller then goes one at a time).  XXH3_4TO8 is a
 * bijection of its 64-bit input (so is each step), so an n-gram's hash is the
 * one before's exactly where its input is the one before's: the inputs are
 * compared, not the hashes, for the whole range at once and off the path
 * from input to hash.
 */
#define VOTE_GRAM_VECTORS(name, nlanes) \
static SH_ALWAYS_INLINE size_t \
name(const char *norm, size_t j, size_t to, uint64_t *hashes, int *nbatch) \
{ \
	GramLanes##nlanes repeats = {0}; \
	int			n = *nbatch; \
\
	for (size_t at = j; at < to; at += (nlanes)) \
	{ \
		GramLanes##nlanes h; \
		GramLanes##nlanes before; \
\
		gram_inputs##nlanes(norm + at + 1 - V2_CHAR_GRAM, &h); \
		gram_inputs##nlanes(norm + at - V2_CHAR_GRAM, &before); \
		repeats |= (GramLanes##nlanes) (h == before); \
		XXH3_4TO8(h); \
		memcpy(hashes + n, &h, sizeof(h)); \
		n += (nlanes); \
	} \
	if (V2_RUNS_ONCE && any_lane##nlanes(&repeats)) \
		return j; \
	*nbatch = n; \
	return to; \
}

VOTE_GRAM_VECTORS(vote_gram_vectors8, 8)
VOTE_GRAM_VECTORS(vote_gram_vectors4, 4)
#endif

/* The n-gram ending at norm[j], hashed and voted (the runs rule). */
static SH_ALWAYS_INLINE void
vote_ascii_gram(HashBatch *batch, const char *norm, size_t j, uint64_t *last, int *nbatch)
{
	uint64_t		hash = gram_input(norm + j + 1 - V2_CHAR_GRAM, V2_CHAR_GRAM);

	XXH3_4TO8(hash);
	if (V2_RUNS_ONCE && hash == *last)
		return;
	*last = hash;
	if (*nbatch == HASH_BATCH)
	{
		hash_batch_vote(batch, *nbatch);
		*nbatch = 0;
	}
	batch->hashes[(*nbatch)++] = hash;
}

/*
 * The n-grams ending at each byte of norm[from, to), hashed and voted in
 * order (the runs rule): in vectors where level has them, a batch's room at
 * a time, one at a time where not (the first, which may follow other
 * characters, and the last few).
 */
static SH_ALWAYS_INLINE void
vote_ascii_grams_with(PartVotes *chars, const char *norm, size_t from, size_t to, SimdLevel level)
{
	HashBatch  *batch = chars->batch;
	uint64_t		last = chars->last;
	int			nbatch = batch->n;
	size_t		j = from;

	SH_ASSERT(chars->any);			/* an n-gram came before */
	if (j < to)
		vote_ascii_gram(batch, norm, j++, &last, &nbatch);
#ifdef GRAM_VECTORS
	while (level != SIMD_PLAIN && j + (level == SIMD_AVX512 ? 8 : 4) <= to)
	{
		size_t		lanes = level == SIMD_AVX512 ? 8 : 4;
		/* The whole vectors that fit in the batch. */
		size_t		vectors_end = j + SH_MIN(to - j, (size_t) (HASH_BATCH - nbatch)) / lanes * lanes;
		size_t		done;

		if (vectors_end == j)
		{
			hash_batch_vote(batch, nbatch);
			nbatch = 0;
			continue;
		}
		if (level == SIMD_AVX512)
			done = vote_gram_vectors8(norm, j, vectors_end, batch->hashes, &nbatch);
		else
			done = vote_gram_vectors4(norm, j, vectors_end, batch->hashes, &nbatch);
		/* The hash of the last n-gram: the last put, as every n-gram was. */
		if (done == vectors_end)
			last = batch->hashes[nbatch - 1];
		for (; done < vectors_end; done++)
			vote_ascii_gram(batch, norm, done, &last, &nbatch);
		j = vectors_end;
	}
#endif
	for (; j < to; j++)
		vote_ascii_gram(batch, norm, j, &last, &nbatch);
	/* A full batch is voted at once (hash_batch_add's rule). */
	if (nbatch == HASH_BATCH)
	{
		hash_batch_vote(batch, nbatch);
		nbatch = 0;
	}
	chars->last = last;
	batch->n = nbatch;
}

#ifdef HAVE_SIMD_COPIES
TARGET_AVX512
static void
vote_ascii_grams_avx512(PartVotes *chars, const char *norm, size_t from, size_t to)
{
	vote_ascii_grams_with(chars, norm, from, to, SIMD_AVX512);
}

TARGET_AVX2
static void
vote_ascii_grams_avx2(PartVotes *chars, const char *norm, size_t from, size_t to)
{
	vote_ascii_grams_with(chars, norm, from, to, SIMD_AVX2);
}
#endif

static void
vote_ascii_grams(PartVotes *chars, const char *norm, size_t from, size_t to)
{
#ifdef HAVE_SIMD_COPIES
	switch (simd_level())
	{
		case SIMD_AVX512:
			vote_ascii_grams_avx512(chars, norm, from, to);
			return;
		case SIMD_AVX2:
			vote_ascii_grams_avx2(chars, norm, from, to);
			return;
		case SIMD_PLAIN:
			break;
	}
#endif
	vote_ascii_grams_with(chars, norm, from, to, SIMD_PLAIN);
}

/*
 * The fingerprint's loop over ASCII: what the loop of for_each_feature_v2
 * does, in three passes over a run of ASCII bytes, each simple enough for the
 * CPU to go through without guessing:
 *   1. the bytes written, without a branch, 8 at once where it can
 *      (write_ascii_run): a word byte lowered, the first separator after a
 *      word as the joining space (the one after the last word is taken back
 *      at the end), the ends of tokens noted;
 *   2. the n-grams the new characters end, hashed and voted in order
 *      (vote_ascii_grams: in vectors with AVX2 or AVX-512);
 *   3. the token shingles the noted ends finish, hashed and voted
 *      (shingles_ended).
 * It starts where every n-gram it ends is all ASCII and an n-gram came before
 * (ascii_voting_ready).  With version 3's digits, it takes no digit and starts
 * where none is among the last V2_CHAR_GRAM - 1 characters: its n-grams have
 * none, and its shingles have one where a number is among the last tokens
 * before it (w->last_number).  Its state lives in locals, not in w: a byte stored
 * through a char pointer may alias anything in memory, so the compiler would
 * read every field of w back after each byte.
 */
static SH_ALWAYS_INLINE bool
ascii_voting_ready(const TokenWriter *w, const FeatureParts *parts, unsigned char next)
{
	return V2_CHAR_GRAM_IN_REGISTER && w->nchars >= V2_CHAR_GRAM && w->ascii_tail >= V2_CHAR_GRAM - 1 &&
		(!parts->digits ||
		 ((unsigned char) (next - '0') >= 10 && w->nchars - w->digit_end >= V2_CHAR_GRAM - 1));
}

/*
 * The tokens the run ended (at ends[0..nends)), the first starting at
 * first_start unless it was open before the run: their starts noted, the
 * shingles they finish hashed and voted at once (their bytes were written a
 * pass before: no stall reading them back), after the ones held back.
 * Returns where the next token starts.
 */
static SH_ALWAYS_INLINE size_t
shingles_ended(TokenWriter *w, PartVotes *tokens, const size_t *ends, int nends,
			   bool was_open, size_t first_start, bool digits)
{
	size_t		start = first_start;

	(digits ? settle_part_digits : settle_part) (tokens);
	for (int k = 0; k < nends; k++)
	{
		if (k > 0 || !was_open)
			w->recent[w->ntokens % RECENT_TOKENS] = start;
		w->ntokens++;
		if (V2_TOKEN_SHINGLE > 0 && w->ntokens >= V2_TOKEN_SHINGLE)
		{
			size_t		first = w->recent[(w->ntokens - V2_TOKEN_SHINGLE) % RECENT_TOKENS];
			uint64_t		hash = XXH3_64bits(w->norm + first, ends[k] - first);

			if (part_votes(tokens, hash))
				hash_batch_add(digits &&
							   w->last_number > w->ntokens - V2_TOKEN_SHINGLE ?
							   tokens->digit_batch : tokens->batch, hash);
		}
		start = ends[k] + 1;
	}
	return start;
}

/*
 * Pass 1 of ascii_run_voting, one byte: written lowered if it is a word byte,
 * as the joining space if it is the first separator after a word; a token
 * end noted there.  Arithmetic, so that it stays free of branches.
 */
static SH_ALWAYS_INLINE void
write_ascii_byte(char *norm, size_t *pos, size_t *ends, int *nends, int *word, unsigned char c)
{
	char		b = ascii_token_byte[c];
	int			was_word = *word;

	*word = b != 0;
	ends[*nends] = *pos;
	*nends += was_word & !*word;
	norm[*pos] = (char) (b | (' ' & (*word - 1)));
	*pos += *word | was_word;
}

/*
 * Eight bytes at once, in the bytes of a word (little-endian, so not where
 * SH_BIG_ENDIAN): a word byte is a letter (ascii_word8_ok: the
 * tables say the same), found by adding to every byte at once so that its top
 * bit tells whether it is at least lo (BYTES_AT_LEAST) or above hi.
 */
#define BYTES(b)	(UINT64_C(0x0101010101010101) * (b))
#define TOP_BITS	BYTES(0x80)
#define BYTES_IN(x, lo, hi) (((x) + BYTES(0x80 - (lo))) & ~((x) + BYTES(0x7F - (hi))) & TOP_BITS)

/*
 * The 8 ASCII bytes x, where no separator follows a separator (each byte
 * makes one character): written, their token ends noted.  Returns how many
 * bytes to take one by one first where some separator does (nothing written).
 */
static SH_ALWAYS_INLINE int
write_ascii_word8(char *norm, size_t *pos, size_t *ends, int *nends, int *word, uint64_t x)
{
	uint64_t		upper = BYTES_IN(x, 'A', 'Z');
	uint64_t		words = upper | BYTES_IN(x, 'a', 'z');
	uint64_t		separators = ~words & TOP_BITS;
	uint64_t		after_word = (words << 8) | ((uint64_t) *word << 7);
	uint64_t		collapsed = separators & ~after_word;
	uint64_t		word_bytes = (words >> 7) * 0xFF;
	uint64_t		out = ((x | (upper >> 2)) & word_bytes) | (BYTES(' ') & ~word_bytes);

	uint64_t		m = separators & after_word;

	if (collapsed != 0)
		return SH_RIGHTMOST_ONE_POS64(collapsed) / 8 + 1;
	memcpy(norm + *pos, &out, sizeof(out));
	/* The first two ends without a branch (ends has room), more one by one. */
	for (int k = 0; k < 2; k++)
	{
		ends[*nends] = *pos + SH_RIGHTMOST_ONE_POS64(m | (UINT64_C(1) << 63)) / 8;
		*nends += m != 0;
		m &= m - 1;
	}
	for (; m != 0; m &= m - 1)
		ends[(*nends)++] = *pos + SH_RIGHTMOST_ONE_POS64(m) / 8;
	*pos += 8;
	*word = (words >> 63) & 1;
	return 0;
}

/* Pass 1 over in[i, end) up to the first byte >= 0x80 (or digit, with digits): returns where it stopped. */
static SH_ALWAYS_INLINE size_t
write_ascii_run(char *norm, size_t *pos, size_t *ends, int *nends, int *word,
				const unsigned char *in, size_t i, size_t end, bool digits)
{
	while (i < end)
	{
		int			one_by_one = 1;

#ifndef SH_BIG_ENDIAN
		if (ascii_word8_ok && end - i >= 8)
		{
			uint64_t		x;

			memcpy(&x, in + i, sizeof(x));
			if ((x & TOP_BITS) == 0 && (!digits || BYTES_IN(x, '0', '9') == 0))
			{
				one_by_one = write_ascii_word8(norm, pos, ends, nends, word, x);
				if (one_by_one == 0)
				{
					i += 8;
					continue;
				}
			}
		}
#endif
		for (; one_by_one > 0 && i < end; one_by_one--, i++)
		{
			if (in[i] >= 0x80 || (digits && (unsigned char) (in[i] - '0') < 10))
				return i;
			write_ascii_byte(norm, pos, ends, nends, word, in[i]);
		}
	}
	return i;
}

static SH_ALWAYS_INLINE size_t
ascii_run_voting_with(TokenWriter *w, PartVotes *tokens, PartVotes *chars,
					  const unsigned char *in, size_t i, size_t end, bool digits)
{
	char	   *norm = w->norm;
	const size_t	start = w->pos;
	const bool	was_open = w->open;
	size_t		pos = start;
	size_t		ends[ASCII_RUN];
	int			nends = 0;
	int			word = was_open;
	size_t		next_start;
	size_t		written;

	/* The n-grams held back come first (the runs rule's order). */
	(digits ? settle_part_digits : settle_part) (chars);
	/* After a finished token, the joining space (taken back if no word follows). */
	if (!was_open)
		norm[pos++] = ' ';
	i = write_ascii_run(norm, &pos, ends, &nends, &word, in, i, end, digits);
	/* The space after the last word stays only if a word follows. */
	if (!word)
		pos--;
	written = pos - start;
	vote_ascii_grams(chars, norm, start, pos);
	next_start = shingles_ended(w, tokens, ends, nends, was_open, start + 1, digits);
	if (word && (nends > 0 || !was_open))
		w->recent[w->ntokens % RECENT_TOKENS] = next_start;
	w->open = word;
	for (size_t k = SH_MIN(written, RECENT_CHARS); k > 0; k--)
		w->recent_chars[(w->nchars + written - k) % RECENT_CHARS] = pos - k;
	w->nchars += written;
	w->ascii_tail += written;
	w->pos = pos;
	/* Version 3's: the open token is a word; an ASCII character came after any SOLO one. */
	w->open_digit = false;
	w->last_solo = false;
	return i;
}

/* Version 2's tokens (digits separate), and version 3's (digits stop the run). */
static SH_NOINLINE size_t
ascii_run_voting(TokenWriter *w, PartVotes *tokens, PartVotes *chars,
				 const unsigned char *in, size_t i, size_t end)
{
	return ascii_run_voting_with(w, tokens, chars, in, i, end, false);
}

static SH_NOINLINE size_t
ascii_run_voting_digits(TokenWriter *w, PartVotes *tokens, PartVotes *chars,
						const unsigned char *in, size_t i, size_t end)
{
	return ascii_run_voting_with(w, tokens, chars, in, i, end, true);
}

/*
 * Calls the parts' callbacks for every feature of the text, in order (spec
 * §6.4).  Inlined into each caller, always: then the parts are constants, and
 * the hot path pays no indirect call and no test of a part it does not have.
 */
static SH_ALWAYS_INLINE SimhashStatus
for_each_feature_v2(const char *text, size_t len, const FeatureParts *parts)
{
	const unsigned char *in = (const unsigned char *) text;
	TokenWriter w;
	size_t		i = 0;
	size_t		next_check = SIMHASH_CORE_CHECK_BYTES;

	SH_ASSERT(parts->token_size >= 0 && parts->token_size <= RECENT_TOKENS);
	SH_ASSERT(parts->char_size >= 0 && parts->char_size <= RECENT_CHARS);
	w.cap = INITIAL_BUFFER;
	w.norm = simhash_core_host.alloc(w.cap);
	if (w.norm == NULL)
		return SIMHASH_NO_MEMORY;
	w.pos = 0;
	w.ntokens = 0;
	w.open = false;
	w.nchars = 0;
	w.ascii_tail = 0;
	w.open_digit = false;
	w.last_solo = false;
	w.digit_end = 0;
	w.last_number = 0;
	memset(&w.counts, 0, sizeof(w.counts));

	while (i < len)
	{
		size_t		run_end = i + SH_MIN(len - i, ASCII_RUN);

		if (w.cap - w.pos < 2 * ASCII_RUN + MAX_CHAR_OUTPUT &&
			!make_room(&w, parts, 2 * ASCII_RUN + MAX_CHAR_OUTPUT))
		{
			simhash_core_host.free(w.norm);
			return SIMHASH_NO_MEMORY;
		}
		/* Stay cancellable. */
		if (i >= next_check)
		{
			simhash_core_check_interrupts();
			next_check = i + SIMHASH_CORE_CHECK_BYTES;
		}
		/* ASCII: at most a space and the byte each. */
		if (parts->vote_ascii && in[i] < 0x80 && ascii_voting_ready(&w, parts, in[i]))
			i = (parts->digits ? ascii_run_voting_digits : ascii_run_voting)
				(&w, parts->token_arg, parts->char_arg, in, i, run_end);
		for (; i < run_end && in[i] < 0x80; i++)
		{
			char		b = ascii_token_byte[in[i]];

			if (parts->vote_ascii && ascii_voting_ready(&w, parts, in[i]))
				break;

			if (parts->digits)
				put_char(&w, parts, b != 0 ? (uint32_t) (unsigned char) b : in[i],
						 b != 0 ? UNICODE_WORD : UNICODE_SEPARATOR);
			else if (b != 0)
			{
				if (!w.open)
					begin_token(&w, parts);
				write_ascii(&w, parts, b);
			}
			else if (w.open)
				end_token(&w, parts);
		}
		/* One other character: at most MAX_CHAR_OUTPUT bytes. */
		if (i < run_end && in[i] >= 0x80)
		{
			int32_t		c = decode_utf8(in, len, &i);

			if (c < 0)
				put_char(&w, parts, 0, UNICODE_SEPARATOR);
			else
				put_code_point(&w, parts, (uint32_t) c);
		}
	}
	if (w.open)
		end_token(&w, parts);
	/* Fewer tokens, or characters, than a feature: one feature of them all. */
	if (w.ntokens > 0 && w.ntokens < parts->token_size)
		emit_feature(parts, parts->token_arg, parts->emit_token, parts->digits && shingle_has_digit(&w),
					 w.norm, w.pos);
	if (w.nchars > 0 && w.nchars < parts->char_size)
		emit_feature(parts, parts->char_arg, parts->emit_char, parts->digits && char_gram_has_digit(&w),
					 w.norm, w.pos);
	settle_parts(&w, parts);
	simhash_core_host.free(w.norm);
	if (parts->digits && parts->counts != NULL)
	{
		w.counts.tokens = w.ntokens;
		*parts->counts = w.counts;
	}
	return SIMHASH_OK;
}

/* ---------- the fingerprint ---------- */

SimhashStatus
text_v2_fingerprint(const char *text, size_t len, uint64_t *result)
{
	HashBatch	token_batch,
				char_batch;
	PartVotes	tokens = {.batch = &token_batch};
	PartVotes	chars = {.batch = &char_batch};
	const FeatureParts parts = {V2_TOKEN_SHINGLE, V2_CHAR_GRAM, part_feature, part_feature, &tokens, &chars, settle_part, V2_CHAR_GRAM_IN_REGISTER, false, NULL};
	SimhashVote vote;
	SimhashStatus status;

	hash_batch_init(&token_batch);
	hash_batch_init(&char_batch);
	status = for_each_feature_v2(text, len, &parts);
	hash_batch_flush(&token_batch);
	hash_batch_flush(&char_batch);
	/* Each part's features vote its weight times. */
	vote_init(&vote);
	vote_merge_times(&vote, &token_batch.vote, V2_TOKEN_WEIGHT);
	vote_merge_times(&vote, &char_batch.vote, V2_CHAR_WEIGHT);
	*result = vote_result(&vote);
	return status;
}

/* ---------- the steps: tokens and features ---------- */

/* The tokens (shingles of one token). */
SimhashStatus
text_v2_walk_tokens(const char *text, size_t len, int64_t unused, FeatureCallback emit, void *arg)
{
	const FeatureParts parts = {1, 0, emit, emit, arg, arg, NULL, false, false, NULL};

	(void) unused;
	return for_each_feature_v2(text, len, &parts);
}

/*
 * The features that vote: the token shingles, then the character n-grams,
 * each part as many times as its weight, so that the plain vote of their
 * hashes is the fingerprint.
 */
SimhashStatus
text_v2_walk_features(const char *text, size_t len, int64_t unused, FeatureCallback emit, void *arg)
{
	SimhashStatus status = SIMHASH_OK;

	(void) unused;
	for (int k = 0; V2_TOKEN_SHINGLE > 0 && k < V2_TOKEN_WEIGHT && status == SIMHASH_OK; k++)
	{
		PartVotes	tokens = {.emit = emit,.arg = arg};
		const FeatureParts parts = {V2_TOKEN_SHINGLE, 0, part_feature, part_feature, &tokens, &tokens, NULL, false, false, NULL};

		status = for_each_feature_v2(text, len, &parts);
	}
	for (int k = 0; V2_CHAR_GRAM > 0 && k < V2_CHAR_WEIGHT && status == SIMHASH_OK; k++)
	{
		PartVotes	chars = {.emit = emit,.arg = arg};
		const FeatureParts parts = {0, V2_CHAR_GRAM, part_feature, part_feature, &chars, &chars, NULL, false, false, NULL};

		status = for_each_feature_v2(text, len, &parts);
	}
	return status;
}

/* ---------- version 3's tokens (text_walk.h) ---------- */

SimhashStatus
text_walk_numbers(const char *text, size_t len, const FeatureParts *given)
{
	FeatureParts parts = *given;

	/* Digits make numbers; ascii_run_voting's parts are the fingerprint's only. */
	parts.digits = true;
	parts.vote_ascii = false;
	return for_each_feature_v2(text, len, &parts);
}

SimhashStatus
text_walk_numbers_voting(const char *text, size_t len, HashBatch batches[4], TextCounts *counts)
{
	PartVotes	tokens = {.batch = &batches[0],.digit_batch = &batches[1]};
	PartVotes	chars = {.batch = &batches[2],.digit_batch = &batches[3]};
	const FeatureParts parts = {V2_TOKEN_SHINGLE, V2_CHAR_GRAM, part_feature, part_feature, &tokens, &chars, settle_part_digits, V2_CHAR_GRAM_IN_REGISTER, true, counts};

	return for_each_feature_v2(text, len, &parts);
}
