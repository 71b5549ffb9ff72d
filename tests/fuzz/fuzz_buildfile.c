/*
 * fuzz_buildfile: a template's build file (api/kilnd/images/buildfile.c),
 * which comes from the client's build context.
 *
 * Input: the build file's bytes.
 * Invariants: no crash or leak; a refusal names a line or the file; an
 * accepted file starts with FROM, has it once, at most
 * BUILDFILE_STEPS_MAX steps with rising line numbers, READY only last;
 * every step has its normalised text and a key; COPY sources are
 * relative without "..", destinations and WORKDIR absolute without "."
 * or ".." components; USER is root or user; RUN and READY have argv.
 */
#include "api/kilnd/images/buildfile.h"
#include "fuzz.h"

static void check_abs(const char *p)
{
	FUZZ_ASSERT(p[0] == '/' && strlen(p) <= BUILDFILE_PATH_MAX);
	FUZZ_ASSERT(!strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buildfile bf;
	struct api_err e = { 0 };
	char key[BUILDFILE_KEY_LEN + 1] = "";

	if (buildfile_parse((const char *)data, size, &bf, &e)) {
		FUZZ_ASSERT(e.code == API_E_BAD_FIELD || e.code == API_E_INTERNAL);
		FUZZ_ASSERT(strstr(e.msg, "build file"));
		return 0;
	}
	FUZZ_ASSERT(bf.n >= 1 && bf.n <= BUILDFILE_STEPS_MAX && bf.steps[0].op == BF_FROM);
	for (size_t i = 0; i < bf.n; i++) {
		const struct bf_step *s = &bf.steps[i];

		FUZZ_ASSERT(s->canon && s->line >= 1);
		FUZZ_ASSERT(i == 0 || (s->line > bf.steps[i - 1].line && s->op != BF_FROM));
		FUZZ_ASSERT(s->op != BF_READY || i == bf.n - 1);
		buildfile_step_key(key, s->canon, NULL, key);
		FUZZ_ASSERT(strlen(key) == BUILDFILE_KEY_LEN);
		switch (s->op) {
		case BF_RUN:
		case BF_READY:
			FUZZ_ASSERT(s->argc >= 1 && s->argv[0] && (!s->shell || s->argc == 1));
			FUZZ_ASSERT(
				s->op != BF_READY ||
				(s->timeout_s >= 1 && s->timeout_s <= BUILDFILE_READY_TIMEOUT_MAX));
			break;
		case BF_COPY:
			FUZZ_ASSERT(s->nsrc >= 1 && s->dest);
			check_abs(s->dest);
			for (size_t k = 0; k < s->nsrc; k++) {
				const char *p = s->src[k];

				FUZZ_ASSERT(p[0] && p[0] != '/' && !strpbrk(p, "*?["));
				FUZZ_ASSERT(strcmp(p, "..") && strncmp(p, "../", 3) &&
					    !strstr(p, "/../") && !strstr(p, "//"));
			}
			break;
		case BF_WORKDIR:
			check_abs(s->arg);
			break;
		case BF_USER:
			FUZZ_ASSERT(!strcmp(s->arg, "root") || !strcmp(s->arg, "user"));
			break;
		case BF_ENV:
			FUZZ_ASSERT(s->nenv >= 1);
			for (size_t k = 0; k < s->nenv; k++)
				FUZZ_ASSERT(
					json_is_string(json_object_get(bf.env, s->env_keys[k])));
			break;
		default:
			break;
		}
	}
	buildfile_free(&bf);
	return 0;
}
