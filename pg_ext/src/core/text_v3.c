/*
 * text_v3.c — the text fingerprint version 3 of docs/fingerprint-spec.md §8:
 * version 2's walk with digits (text_walk.h: numbers are tokens of their
 * own), version 2's two kinds of features, and three rules of its own: runs
 * vote once (as version 2), a distinct feature votes at its first
 * V3_MAX_VOTES occurrences only, and a feature with a digit in it votes by
 * the ramp of the text's share of numbers among its words.
 *
 * The ramp is known only at the end of the text, so each kind's features
 * are voted into two tallies, with and without a digit, which the ramp then
 * weighs; the walk is version 2's (text_v2.c, text_walk_numbers_voting), its
 * fast path over ASCII too.  The cap takes back, at the end, the votes past
 * each hash's V3_MAX_VOTES-th occurrence (the cap's section below: a sketch
 * finds them, in bounded memory); the host's allocator refusing memory is
 * SIMHASH_NO_MEMORY.
 */
#include "core/text_walk.h"

/*
 * Version 3's rules (spec §8.3, §8.4): a distinct feature votes at most
 * V3_MAX_VOTES times; a feature without a digit votes its kind's weight x
 * V3_RAMP_STEPS, one with a digit its kind's weight x V3_NUMBER_WEIGHT x the
 * ramp, which goes from 0 at V3_NUMBER_SHARE_LOW % numbers among the words
 * to V3_RAMP_STEPS at V3_NUMBER_SHARE_HIGH %.  Python's home of the same
 * constants: pysimhash_sql/hashing.py (V3_*).
 */
#define V3_MAX_VOTES 32
#define V3_NUMBER_WEIGHT 2
#define V3_NUMBER_SHARE_LOW 15
#define V3_NUMBER_SHARE_HIGH 25
#define V3_RAMP_STEPS 16

/*
 * The cap, exactly and in bounded memory.  A feature's votes past its
 * V3_MAX_VOTES-th occurrence are what the cap takes away, so the walk votes
 * every feature the runs rule leaves (as version 2 does, fast path and all),
 * and only the hashes seen more than V3_MAX_VOTES times are then counted
 * exactly and their excess votes taken back from their tallies.  To find
 * them, each kind counts its hashes as they are voted in a sketch: a
 * saturating byte per slot, the slot a keyed mix of the hash (the hashes are
 * public, XXH3 seed 0: the key keeps a text from aiming many features at one
 * slot; a shared slot only costs time, never changes a result).  A hash whose
 * slot stays at most V3_MAX_VOTES was seen at most that many times: most of a
 * text's features.  The hashes in hot slots (over V3_MAX_VOTES) are counted
 * exactly in an ExactCounts table:
 *   - from the logs: the walk keeps each kind's voted hashes (CAP_LOG_LIMIT
 *     at most, 8 bytes each: their mixes, which the sketch computes anyway and
 *     the end's pass then only shifts), so a text of up to some 250 kB is
 *     walked once;
 *   - else by walking the text again, one kind at a time, in order: each walk
 *     counts the hot hashes of one part of the hash space, the table never
 *     above cap_exact_limit distinct hashes (a text's length / 64, between
 *     CAP_EXACT_LIMIT_MIN and CAP_EXACT_LIMIT_MAX: a part that would take more
 *     is halved during the walk), so the memory is bounded whatever the text:
 *     sketches of at most CAP_SKETCH_MAX_SLOTS bytes (4 MB each, from 8 MB of
 *     text), logs of CAP_LOG_LIMIT hashes (2 MB each) and a table of 2 x
 *     CAP_EXACT_LIMIT_MAX slots of 24 bytes (48 MB, from 64 MB of text; 2x
 *     while it is rebuilt): at most some 110 MB, and about 1.5 times the
 *     text's length below.  The time grows with the number of distinct
 *     features in hot slots: one more walk per cap_exact_limit of them.
 * The sketches and the logs' first rooms come from the host's scratch memory
 * where it has some and they fit (SIMHASH_CORE_SCRATCH_LIMIT: texts up to
 * about 1 MB), so that a backend does not fault in fresh pages for each text.
 * The logs hold a kind's hashes with and without a digit apart, not in the
 * order of the text: where one hash came both with and without a digit (two
 * features of one hash), which of its occurrences are past the cap depends on
 * the order, and that kind is walked again in order.
 */
#define CAP_SKETCH_MIN_BITS 8		/* 256 slots */
#define CAP_SKETCH_MAX_SLOTS (1 << 22)
#define CAP_LOG_LIMIT (1 << 18)
#define CAP_EXACT_LIMIT_MIN (1 << 12)
#define CAP_EXACT_LIMIT_MAX (1 << 20)
#define CAP_EXACT_MIN_SLOTS 256
#define CAP_LOG_MIN_ROOM 4096

/* Any odd constant mixes: a keyed hash's high bits, the slot (Fibonacci hashing). */
#define CAP_MIX UINT64_C(0x9E3779B97F4A7C15)

typedef struct HashSketch
{
	uint8_t    *counts;			/* saturating at V3_MAX_VOTES + 1 */
	int			shift;			/* 64 - log2(slots) */
	uint64_t	key;
} HashSketch;

/* A hash's keyed mix: a bijection (hash_unmix undoes it), whose high bits are its slot. */
static inline uint64_t
hash_mix(const HashSketch *sketch, uint64_t hash)
{
	return (hash ^ sketch->key) * CAP_MIX;
}

static inline uint64_t
hash_unmix(const HashSketch *sketch, uint64_t mixed)
{
	/* CAP_MIX's inverse modulo 2^64 (Newton's iteration, each step doubling the bits right). */
	uint64_t	inverse = CAP_MIX;

	for (int i = 0; i < 5; i++)
		inverse *= 2 - CAP_MIX * inverse;
	return (mixed * inverse) ^ sketch->key;
}

static inline size_t
sketch_slot(const HashSketch *sketch, uint64_t hash)
{
	return (size_t) (hash_mix(sketch, hash) >> sketch->shift);
}

static inline bool
sketch_hot(const HashSketch *sketch, uint64_t hash)
{
	return sketch->counts[sketch_slot(sketch, hash)] > V3_MAX_VOTES;
}

/* The log2 of a sketch's slots: about one for every two bytes of a text of len bytes. */
static int
sketch_bits(size_t len)
{
	int			bits = CAP_SKETCH_MIN_BITS;

	while (((size_t) 1 << bits) < len / 2 && ((size_t) 1 << bits) < CAP_SKETCH_MAX_SLOTS)
		bits++;
	return bits;
}

/* A sketch of 2^bits slots in counts (its memory, NULL: allocated). */
static bool
sketch_init(HashSketch *sketch, int bits, uint8_t *counts)
{
	size_t		slots = (size_t) 1 << bits;

	sketch->counts = counts != NULL ? counts : simhash_core_host.alloc(slots);
	if (sketch->counts == NULL)
		return false;
	memset(sketch->counts, 0, slots);
	sketch->shift = 64 - bits;
	sketch->key = (uint64_t) (uintptr_t) sketch->counts * CAP_MIX;
	return true;
}

/* The hashes counted in the sketch, and their mixes put at mixes (or NULL: not). */
static SH_ALWAYS_INLINE void
sketch_add(HashSketch *sketch, const uint64_t *hashes, size_t n, uint64_t *mixes)
{
	/* The sketch's fields in locals: its byte stores could alias them. */
	uint8_t    *counts = sketch->counts;
	const HashSketch fields = *sketch;

	for (size_t k = 0; k < n; k++)
	{
		uint64_t	mixed = hash_mix(&fields, hashes[k]);
		uint8_t    *count = &counts[mixed >> fields.shift];

		if (mixes != NULL)
			mixes[k] = mixed;
		*count += *count <= V3_MAX_VOTES;
	}
}

/* Whether a slot of the sketch is over V3_MAX_VOTES (a pass the compiler vectorises). */
static bool
sketch_any_hot(const HashSketch *sketch)
{
	size_t		slots = (size_t) 1 << (64 - sketch->shift);
	uint8_t		most = 0;

	for (size_t i = 0; i < slots; i++)
		most = SH_MAX(most, sketch->counts[i]);
	return most > V3_MAX_VOTES;
}

/*
 * Exact counts of hashes by open addressing (an entry is empty where seen is
 * 0), at most half full, growing up to limit entries.  digit counts the
 * occurrences with a digit: all of them from the logs, those past the cap in
 * a walk in order.
 */
typedef struct ExactEntry
{
	uint64_t	hash;
	int64_t		seen;
	int64_t		digit;
} ExactEntry;

typedef struct ExactCounts
{
	ExactEntry *entries;
	size_t		mask;			/* slots - 1 */
	size_t		used;
	size_t		limit;
	uint64_t	key;
} ExactCounts;

static inline size_t
exact_slot(const ExactCounts *table, uint64_t hash)
{
	return (size_t) (((hash ^ table->key) * CAP_MIX) >> 32) & table->mask;
}

static bool
exact_init(ExactCounts *table, size_t slots, size_t limit)
{
	table->entries = simhash_core_host.alloc(slots * sizeof(ExactEntry));
	if (table->entries == NULL)
		return false;
	memset(table->entries, 0, slots * sizeof(ExactEntry));
	table->mask = slots - 1;
	table->used = 0;
	table->limit = limit;
	table->key = (uint64_t) (uintptr_t) table->entries * CAP_MIX;
	return true;
}

/* Puts an entry (of a hash not in the table) into its slot. */
static ExactEntry *
exact_place(ExactCounts *table, const ExactEntry *entry)
{
	size_t		slot = exact_slot(table, entry->hash);

	while (table->entries[slot].seen != 0)
		slot = (slot + 1) & table->mask;
	table->entries[slot] = *entry;
	table->used++;
	return &table->entries[slot];
}

/* The table again, of the given slots, with only the entries keep says to. */
static bool
exact_rebuild(ExactCounts *table, size_t slots, bool (*keep) (uint64_t hash, const void *arg),
			  const void *arg)
{
	ExactCounts old = *table;

	if (!exact_init(table, slots, old.limit))
	{
		*table = old;
		return false;
	}
	for (size_t i = 0; i <= old.mask; i++)
		if (old.entries[i].seen != 0 && (keep == NULL || keep(old.entries[i].hash, arg)))
			exact_place(table, &old.entries[i]);
	simhash_core_host.free(old.entries);
	return true;
}

/*
 * The entry of hash, added (seen 0 until the caller counts it) where there is
 * room; NULL where the table holds its limit (or the host had no memory).
 */
static ExactEntry *
exact_entry(ExactCounts *table, uint64_t hash)
{
	size_t		slot = exact_slot(table, hash);
	ExactEntry	entry = {hash, 0, 0};

	while (table->entries[slot].seen != 0)
	{
		if (table->entries[slot].hash == hash)
			return &table->entries[slot];
		slot = (slot + 1) & table->mask;
	}
	if (table->used >= table->limit)
		return NULL;
	if (table->used + 1 > (table->mask + 1) / 2)
	{
		if (!exact_rebuild(table, (table->mask + 1) * 2, NULL, NULL))
			return NULL;
		return exact_place(table, &entry);
	}
	table->entries[slot] = entry;
	table->used++;
	return &table->entries[slot];
}

static void
exact_free(ExactCounts *table)
{
	if (table->entries != NULL)
		simhash_core_host.free(table->entries);
	table->entries = NULL;
}

/* The ramp (spec §8.3): 0 .. V3_RAMP_STEPS, by the share of numbers among the words. */
static int64_t
number_ramp(const TextCounts *counts)
{
	int64_t		words = counts->tokens - counts->solo_following;
	int64_t		above = 100 * counts->numbers - V3_NUMBER_SHARE_LOW * words;

	if (words <= 0 || above <= 0)
		return 0;
	return SH_MIN(V3_RAMP_STEPS,
				  V3_RAMP_STEPS * above / ((V3_NUMBER_SHARE_HIGH - V3_NUMBER_SHARE_LOW) * words));
}

/* A kind's votes per feature, with and without a digit in it. */
static inline int64_t
feature_votes(int64_t weight, bool digit, int64_t ramp)
{
	return weight * (digit ? V3_NUMBER_WEIGHT * ramp : V3_RAMP_STEPS);
}

/* ---------- the cap's kinds ---------- */

/* Multiplies in the mix of a walk's parts of the hash space, one other than the sketch's. */
#define CAP_PART_MIX UINT64_C(0xD6E8FEB86659FD93)

typedef struct KindCap KindCap;

/* The hashes of one kind voted with (or without) a digit, as the walk voted them: their mixes. */
typedef struct HashLog
{
	KindCap    *kind;
	uint64_t   *hashes;
	size_t		n;
	size_t		room;
	bool		owned;			/* hashes allocated (not the host's scratch) */
} HashLog;

/* One kind's cap: its sketch, and its logs while they hold every hash voted. */
struct KindCap
{
	HashSketch	sketch;
	bool		sketch_owned;	/* its counts allocated (not the host's scratch) */
	HashLog		logs[2];		/* without a digit, with one */
	bool		logging;
};

static void
logs_drop(KindCap *kind)
{
	for (int f = 0; f < 2; f++)
	{
		if (kind->logs[f].owned)
			simhash_core_host.free(kind->logs[f].hashes);
		kind->logs[f].hashes = NULL;
		kind->logs[f].owned = false;
		kind->logs[f].n = kind->logs[f].room = 0;
	}
	kind->logging = false;
}

/*
 * Room for n more hashes at the end of a kind's log (grown where it has
 * none), or NULL where the logs are dropped: past CAP_LOG_LIMIT, or the host
 * had no memory for them (the kind is walked again instead).
 */
static uint64_t *
log_end(HashLog *log, size_t n)
{
	KindCap    *kind = log->kind;

	if (kind->logs[0].n + kind->logs[1].n + n > CAP_LOG_LIMIT)
	{
		logs_drop(kind);
		return NULL;
	}
	if (log->hashes == NULL || log->n + n > log->room)
	{
		size_t		room = log->hashes == NULL ? log->room : 2 * log->room;
		uint64_t   *grown;

		while (room < log->n + n)
			room *= 2;
		grown = log->owned ? simhash_core_host.realloc(log->hashes, room * sizeof(uint64_t)) :
			simhash_core_host.alloc(room * sizeof(uint64_t));
		if (grown == NULL)
		{
			logs_drop(kind);
			return NULL;
		}
		/* A log outgrowing its room in the host's scratch leaves it. */
		if (!log->owned && log->hashes != NULL)
			memcpy(grown, log->hashes, log->n * sizeof(uint64_t));
		log->hashes = grown;
		log->room = room;
		log->owned = true;
	}
	return log->hashes + log->n;
}

/* A HashBatch's seen: the hashes voted counted in the sketch, and their mixes logged while there is room. */
static void
cap_seen(const uint64_t *hashes, size_t n, void *arg)
{
	HashLog    *log = (HashLog *) arg;
	uint64_t   *mixes = log->kind->logging && n > 0 ? log_end(log, n) : NULL;

	sketch_add(&log->kind->sketch, hashes, n, mixes);
	if (mixes != NULL)
		log->n += n;
}

/*
 * The first room of a log: about a hash a byte for the n-grams and one every
 * 4 bytes for the shingles, without a digit (so that English grows it
 * rarely); those with one start small.
 */
static size_t
log_first_room(size_t len, int kind, int digit)
{
	size_t		room = digit ? CAP_LOG_MIN_ROOM : SH_MIN(len, CAP_LOG_LIMIT) / (kind == 0 ? 4 : 1);

	return SH_MAX(room, CAP_LOG_MIN_ROOM);
}

/*
 * Each kind's sketch, and the batches ([0], [1] the token shingles', [2], [3]
 * the n-grams') showing it; with scratch (the host's scratch memory, where
 * the sketches and the logs' first rooms fit in SIMHASH_CORE_SCRATCH_LIMIT)
 * *scratch is the block to give back, else NULL.
 */
static bool
caps_init(KindCap caps[2], HashBatch batches[4], size_t len, void **scratch)
{
	int			bits = sketch_bits(len);
	size_t		need = (size_t) 2 << bits;
	uint8_t    *block = NULL;

	for (int t = 0; t < 2; t++)
		for (int f = 0; f < 2; f++)
			need += log_first_room(len, t, f) * sizeof(uint64_t);
	if (scratch != NULL && simhash_core_host.scratch_take != NULL && need <= SIMHASH_CORE_SCRATCH_LIMIT)
		block = simhash_core_host.scratch_take(need);
	if (scratch != NULL)
		*scratch = block;
	for (int t = 0; t < 2; t++)
	{
		memset(&caps[t], 0, sizeof(caps[t]));
		if (!sketch_init(&caps[t].sketch, bits, block))
		{
			if (t == 1)
				simhash_core_host.free(caps[0].sketch.counts);
			return false;
		}
		caps[t].sketch_owned = block == NULL;
		if (block != NULL)
			block += (size_t) 1 << bits;
		caps[t].logging = true;
		for (int f = 0; f < 2; f++)
		{
			caps[t].logs[f].kind = &caps[t];
			caps[t].logs[f].room = log_first_room(len, t, f);
			if (block != NULL)
			{
				caps[t].logs[f].hashes = (uint64_t *) block;
				block += caps[t].logs[f].room * sizeof(uint64_t);
			}
			batches[2 * t + f].seen = cap_seen;
			batches[2 * t + f].seen_arg = &caps[t].logs[f];
		}
	}
	return true;
}

static void
caps_free(KindCap caps[2], void *scratch)
{
	for (int t = 0; t < 2; t++)
	{
		logs_drop(&caps[t]);
		if (caps[t].sketch_owned)
			simhash_core_host.free(caps[t].sketch.counts);
	}
	if (scratch != NULL)
		simhash_core_host.scratch_give(scratch);
}

/*
 * The votes past the cap of the counted hashes taken back from the tallies
 * (plain: without a digit); false, taking nothing, where counted apart a
 * hash came both with and without a digit.
 */
static bool
take_excess(const ExactCounts *table, bool in_order, HashBatch *plain, HashBatch *digit)
{
	for (size_t i = 0; i <= table->mask && !in_order; i++)
	{
		const ExactEntry *entry = &table->entries[i];

		if (entry->seen > V3_MAX_VOTES && entry->digit != 0 && entry->digit != entry->seen)
			return false;
	}
	for (size_t i = 0; i <= table->mask; i++)
	{
		const ExactEntry *entry = &table->entries[i];
		int64_t		excess = entry->seen - V3_MAX_VOTES;
		int64_t		digits = in_order ? entry->digit : entry->digit != 0 ? excess : 0;

		if (excess > 0 && digits != 0)
			vote_add_hash_times(&digit->vote, entry->hash, -digits);
		if (excess > 0 && excess != digits)
			vote_add_hash_times(&plain->vote, entry->hash, -(excess - digits));
	}
	return true;
}

#define HOT_CHUNK 256

/*
 * The hashes of the logs past the cap taken back from their tallies; or
 * *again where a hash came with and without a digit (the order decides: the
 * text is walked again).
 */
static SimhashStatus
cap_from_logs(const KindCap *kind, HashBatch *plain, HashBatch *digit, bool *again)
{
	ExactCounts table;
	const uint8_t *counts = kind->sketch.counts;
	const int	shift = kind->sketch.shift;

	if (!exact_init(&table, CAP_EXACT_MIN_SLOTS, SIZE_MAX))
		return SIMHASH_NO_MEMORY;
	for (int f = 0; f < 2; f++)
		for (size_t k = 0; k < kind->logs[f].n; k += HOT_CHUNK)
		{
			/* The hot mixes of a chunk picked first, without a branch, then counted. */
			const uint64_t *mixes = kind->logs[f].hashes;
			uint64_t	hot[HOT_CHUNK];
			size_t		nhot = 0;
			size_t		end = SH_MIN(kind->logs[f].n, k + HOT_CHUNK);

			for (size_t i = k; i < end; i++)
			{
				hot[nhot] = mixes[i];
				nhot += counts[mixes[i] >> shift] > V3_MAX_VOTES;
			}
			for (size_t i = 0; i < nhot; i++)
			{
				ExactEntry *entry = exact_entry(&table, hot[i]);

				if (entry == NULL)
				{
					exact_free(&table);
					return SIMHASH_NO_MEMORY;
				}
				entry->seen++;
				entry->digit += f;
			}
		}
	/* The table counted the hashes' mixes: its hashes now (the table only read after). */
	for (size_t i = 0; i <= table.mask; i++)
		if (table.entries[i].seen != 0)
			table.entries[i].hash = hash_unmix(&kind->sketch, table.entries[i].hash);
	*again = !take_excess(&table, false, plain, digit);
	exact_free(&table);
	return SIMHASH_OK;
}

/*
 * Walks counting one kind's hot hashes of one part of the hash space: those
 * whose mix's top `bits` bits are `part`.  The fingerprint's walk counts
 * them as the logs do (with and without a digit apart); where a hash came
 * both ways, a walk of the kind's features in order counts the part again.
 */
typedef struct CapWalk
{
	const HashSketch *sketch;
	ExactCounts table;
	uint64_t	key;
	int			bits;
	uint64_t	part;
	uint64_t	last;			/* the runs rule's, in order */
	bool		any;
	bool		failed;			/* the host had no memory */
} CapWalk;

/* A HashBatch's seen_arg in a walk in parts: the kind's walk, and the batch's digits. */
typedef struct CapWalkBatch
{
	CapWalk    *walk;
	int			digit;
} CapWalkBatch;

static bool
in_part(uint64_t hash, const void *arg)
{
	const CapWalk *walk = (const CapWalk *) arg;

	return walk->bits == 0 || ((hash ^ walk->key) * CAP_PART_MIX) >> (64 - walk->bits) == walk->part;
}

/* The entry of a hot hash of the walk's part (the part halved while the table is full), or NULL. */
static ExactEntry *
walk_entry(CapWalk *walk, uint64_t hash)
{
	ExactEntry *entry;

	if (walk->failed || !sketch_hot(walk->sketch, hash) || !in_part(hash, walk))
		return NULL;
	while ((entry = exact_entry(&walk->table, hash)) == NULL)
	{
		/* The table full: the part halved, its lower half's hashes kept. */
		if (walk->table.used < walk->table.limit || walk->bits == 64 ||
			(walk->bits++, walk->part *= 2,
			 !exact_rebuild(&walk->table, walk->table.mask + 1, in_part, walk)))
		{
			walk->failed = true;
			return NULL;
		}
		if (!in_part(hash, walk))
			return NULL;
	}
	return entry;
}

/* A HashBatch's seen in a walk in parts. */
static void
walk_seen(const uint64_t *hashes, size_t n, void *arg)
{
	CapWalkBatch *batch = (CapWalkBatch *) arg;

	for (size_t k = 0; k < n; k++)
	{
		ExactEntry *entry = walk_entry(batch->walk, hashes[k]);

		if (entry != NULL)
		{
			entry->seen++;
			entry->digit += batch->digit;
		}
	}
}

/* A FeatureCallback of the walk in order. */
static void
walk_feature(const char *data, size_t len, void *arg)
{
	CapWalk    *walk = (CapWalk *) arg;
	uint64_t	hash = feature_hash(data, len);
	ExactEntry *entry;

	if (walk->any && hash == walk->last)
		return;
	walk->any = true;
	walk->last = hash;
	entry = walk_entry(walk, hash);
	if (entry != NULL && ++entry->seen > V3_MAX_VOTES && has_digit(data, len))
		entry->digit++;
}

/*
 * The most distinct hashes a walk in parts counts at once: a text's length
 * / 64 within bounds (so a test of a few MB walks in parts).
 */
static size_t
cap_exact_limit(size_t len)
{
	return SH_MAX(CAP_EXACT_LIMIT_MIN, SH_MIN(CAP_EXACT_LIMIT_MAX, len / 64));
}

/* The hashes past the cap taken back, from walks of the text part by part. */
static SimhashStatus
cap_in_parts(const HashSketch *sketch, HashBatch *plain, HashBatch *digit,
			 const char *text, size_t len, bool tokens)
{
	CapWalk		walk = {.sketch = sketch,.key = sketch->key ^ CAP_PART_MIX};
	CapWalkBatch seen[2] = {{&walk, 0}, {&walk, 1}};
	const FeatureParts parts = {tokens ? V2_TOKEN_SHINGLE : 0, tokens ? 0 : V2_CHAR_GRAM,
		walk_feature, walk_feature, &walk, &walk, NULL, false, true, NULL};
	SimhashStatus status = SIMHASH_OK;

	if (!exact_init(&walk.table, CAP_EXACT_MIN_SLOTS, cap_exact_limit(len)))
		return SIMHASH_NO_MEMORY;
	while (status == SIMHASH_OK && !walk.failed)
	{
		HashBatch	batches[4];
		TextCounts	counts;

		/* The fingerprint's walk, the kind's hashes counted (its votes dropped). */
		for (int k = 0; k < 4; k++)
			hash_batch_init(&batches[k]);
		for (int f = 0; f < 2; f++)
		{
			batches[(tokens ? 0 : 2) + f].seen = walk_seen;
			batches[(tokens ? 0 : 2) + f].seen_arg = &seen[f];
		}
		status = text_walk_numbers_voting(text, len, batches, &counts);
		for (int k = 0; k < 4; k++)
			hash_batch_flush(&batches[k]);
		if (status != SIMHASH_OK || walk.failed)
			break;
		if (!take_excess(&walk.table, false, plain, digit))
		{
			/* The part again, in order. */
			memset(walk.table.entries, 0, (walk.table.mask + 1) * sizeof(ExactEntry));
			walk.table.used = 0;
			walk.any = false;
			status = text_walk_numbers(text, len, &parts);
			if (status != SIMHASH_OK || walk.failed)
				break;
			take_excess(&walk.table, true, plain, digit);
		}
		/* The next part: the one after, as wide as the widest starting there; none after the last. */
		walk.part++;
		while (walk.bits > 0 && (walk.part & 1) == 0)
			walk.part >>= 1, walk.bits--;
		if (walk.bits == 0)
			break;
		memset(walk.table.entries, 0, (walk.table.mask + 1) * sizeof(ExactEntry));
		walk.table.used = 0;
	}
	exact_free(&walk.table);
	return status == SIMHASH_OK && walk.failed ? SIMHASH_NO_MEMORY : status;
}

/* One kind's hashes past the cap taken back from its tallies (plain: without a digit). */
static SimhashStatus
cap_kind(KindCap *kind, HashBatch *plain, HashBatch *digit, const char *text, size_t len, bool tokens)
{
	bool		again = !kind->logging;
	SimhashStatus status = SIMHASH_OK;

	if (!sketch_any_hot(&kind->sketch))
		return SIMHASH_OK;
	if (kind->logging)
		status = cap_from_logs(kind, plain, digit, &again);
	logs_drop(kind);
	if (status == SIMHASH_OK && again)
		status = cap_in_parts(&kind->sketch, plain, digit, text, len, tokens);
	return status;
}

/* ---------- the fingerprint ---------- */

SimhashStatus
text_v3_fingerprint(const char *text, size_t len, uint64_t *result)
{
	HashBatch	batches[4];
	KindCap		caps[2];
	TextCounts	counts = {0};
	SimhashVote vote;
	SimhashStatus status;
	int64_t		ramp;
	void	   *scratch;

	*result = 0;
	for (int k = 0; k < 4; k++)
		hash_batch_init(&batches[k]);
	if (!caps_init(caps, batches, len, &scratch))
		return SIMHASH_NO_MEMORY;
	status = text_walk_numbers_voting(text, len, batches, &counts);
	for (int k = 0; k < 4; k++)
		hash_batch_flush(&batches[k]);
	for (int t = 0; t < 2 && status == SIMHASH_OK; t++)
		status = cap_kind(&caps[t], &batches[2 * t], &batches[2 * t + 1], text, len, t == 0);
	caps_free(caps, scratch);
	ramp = number_ramp(&counts);
	vote_init(&vote);
	vote_merge_times(&vote, &batches[0].vote, feature_votes(V2_TOKEN_WEIGHT, false, ramp));
	vote_merge_times(&vote, &batches[1].vote, feature_votes(V2_TOKEN_WEIGHT, true, ramp));
	vote_merge_times(&vote, &batches[2].vote, feature_votes(V2_CHAR_WEIGHT, false, ramp));
	vote_merge_times(&vote, &batches[3].vote, feature_votes(V2_CHAR_WEIGHT, true, ramp));
	*result = vote_result(&vote);
	return status;
}

/* ---------- the steps: tokens and features ---------- */

SimhashStatus
text_v3_walk_tokens(const char *text, size_t len, int64_t unused, FeatureCallback emit, void *arg)
{
	const FeatureParts parts = {1, 0, emit, emit, arg, arg, NULL, false, true, NULL};

	(void) unused;
	return text_walk_numbers(text, len, &parts);
}

/*
 * One kind's features that vote, handed on in order with their votes: a
 * hash in a hot slot of the kind's sketch counted in a table (of the hashes
 * in hot slots only, so its memory grows with their number).
 */
typedef struct KindEmit
{
	const HashSketch *sketch;
	ExactCounts table;
	uint64_t	last;			/* the runs rule's */
	bool		any;
	bool		failed;
	int64_t		weight;
	int64_t		ramp;
	WeightedFeatureCallback emit;
	void	   *arg;
} KindEmit;

static void
emit_feature(const char *data, size_t len, void *arg)
{
	KindEmit   *kind = (KindEmit *) arg;
	uint64_t	hash = feature_hash(data, len);
	bool		digit;
	int64_t		votes;

	if (kind->any && hash == kind->last)
		return;
	kind->any = true;
	kind->last = hash;
	if (kind->failed)
		return;
	if (sketch_hot(kind->sketch, hash))
	{
		ExactEntry *entry = exact_entry(&kind->table, hash);

		if (entry == NULL)
		{
			kind->failed = true;
			return;
		}
		if (++entry->seen > V3_MAX_VOTES)
			return;
	}
	digit = has_digit(data, len);
	votes = feature_votes(kind->weight, digit, kind->ramp);
	if (votes > 0)
		kind->emit(data, len, votes, kind->arg);
}

/*
 * The features that vote with their votes, the token shingles first: the
 * fingerprint's walk counts the words and numbers (the ramp) and fills the
 * sketches, then one walk a kind.
 */
SimhashStatus
text_v3_walk_features(const char *text, size_t len, WeightedFeatureCallback emit, void *arg)
{
	HashBatch	batches[4];
	KindCap		caps[2];
	TextCounts	counts = {0};
	SimhashStatus status;

	for (int k = 0; k < 4; k++)
		hash_batch_init(&batches[k]);
	/* No scratch: emit may call the core again. */
	if (!caps_init(caps, batches, len, NULL))
		return SIMHASH_NO_MEMORY;
	caps[0].logging = caps[1].logging = false;
	status = text_walk_numbers_voting(text, len, batches, &counts);
	for (int k = 0; k < 4; k++)
		hash_batch_flush(&batches[k]);
	for (int t = 0; t < 2 && status == SIMHASH_OK; t++)
	{
		KindEmit	kind = {.sketch = &caps[t].sketch,.weight = t == 0 ? V2_TOKEN_WEIGHT : V2_CHAR_WEIGHT,
		.ramp = number_ramp(&counts),.emit = emit,.arg = arg};
		const FeatureParts parts = {t == 0 ? V2_TOKEN_SHINGLE : 0, t == 0 ? 0 : V2_CHAR_GRAM,
		emit_feature, emit_feature, &kind, &kind, NULL, false, true, NULL};

		if (!exact_init(&kind.table, CAP_EXACT_MIN_SLOTS, SIZE_MAX))
		{
			status = SIMHASH_NO_MEMORY;
			break;
		}
		status = text_walk_numbers(text, len, &parts);
		exact_free(&kind.table);
		if (status == SIMHASH_OK && kind.failed)
			status = SIMHASH_NO_MEMORY;
	}
	caps_free(caps, NULL);
	return status;
}
