/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal unit-test harness for the portable cores: each test is a function
 * registered with CTEST(); the binary lists or runs them for pytest.
 */
#ifndef REDCAP_CTEST_H
#define REDCAP_CTEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctest {
	const char *name;
	void (*fn)(void);
};

#define CTEST_MAX 256
extern struct ctest ctest_table[CTEST_MAX];
extern int ctest_count;

#define CTEST(name)							\
	static void ctest_##name(void);					\
	__attribute__((constructor)) static void ctest_reg_##name(void)	\
	{								\
		if (ctest_count < CTEST_MAX)				\
			ctest_table[ctest_count++] =			\
				(struct ctest){ #name, ctest_##name };	\
	}								\
	static void ctest_##name(void)

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			exit(1);					\
		}							\
	} while (0)

#define CHECK_EQ(a, b)							\
	do {								\
		long long ctest_a = (long long)(a);			\
		long long ctest_b = (long long)(b);			\
		if (ctest_a != ctest_b) {				\
			fprintf(stderr,					\
				"%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
				__FILE__, __LINE__, #a, ctest_a, #b, ctest_b); \
			exit(1);					\
		}							\
	} while (0)

#define CHECK_STREQ(a, b)						\
	do {								\
		const char *ctest_a = (a), *ctest_b = (b);		\
		if (strcmp(ctest_a, ctest_b)) {				\
			fprintf(stderr,					\
				"%s:%d: CHECK_STREQ failed: \"%s\" != \"%s\"\n", \
				__FILE__, __LINE__, ctest_a, ctest_b);	\
			exit(1);					\
		}							\
	} while (0)

/* xorshift64: the tests' reproducible random numbers; seed by setting ctest_rng. */
static uint64_t ctest_rng = 0x9e3779b97f4a7c15ull;

static inline uint64_t ctest_rand64(void)
{
	ctest_rng ^= ctest_rng << 13;
	ctest_rng ^= ctest_rng >> 7;
	ctest_rng ^= ctest_rng << 17;
	return ctest_rng;
}

/* Uniform enough in 0..n-1, n < 2^56. */
static inline uint64_t ctest_rand(uint64_t n)
{
	return (ctest_rand64() >> 8) % n;
}

/*
 * Splits @line at spaces into argv (at most @max words) for the parser
 * tests; the words live in a private copy, valid until the next call.
 */
static inline unsigned int ctest_words(const char *line, char **argv, unsigned int max)
{
	static char buf[512];
	unsigned int argc = 0;
	char *p;

	CHECK(strlen(line) < sizeof(buf));
	strcpy(buf, line);
	for (p = strtok(buf, " "); p; p = strtok(NULL, " ")) {
		CHECK(argc < max);
		argv[argc++] = p;
	}
	return argc;
}

/*
 * Each {line, error} of @cases must be refused with exactly that error by
 * @parse(line) (NULL: accepted).
 */
struct ctest_refusal {
	const char *line, *error;
};

#define CHECK_REFUSALS(cases, parse)					\
	do {								\
		unsigned int ctest_i;					\
		const char *ctest_err;					\
									\
		for (ctest_i = 0; ctest_i < sizeof(cases) / sizeof((cases)[0]); ctest_i++) { \
			ctest_err = parse((cases)[ctest_i].line);	\
			if (!ctest_err || strcmp(ctest_err, (cases)[ctest_i].error)) { \
				fprintf(stderr, "%s:%d: '%s': got '%s', want '%s'\n", \
					__FILE__, __LINE__, (cases)[ctest_i].line, \
					ctest_err ? ctest_err : "(accepted)", \
					(cases)[ctest_i].error);	\
				exit(1);				\
			}						\
		}							\
	} while (0)

#endif
