/*
 * The backend registry (backend/registry.h): the compiled-in table in precedence order, opening a
 * backend by id with options, the first available one, and all of them at once.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "backend.h"
#include "err.h"
#include "reference/reference.h"
#include "registry.h"

Test(registry, lists_the_reference_and_keeps_precedence_order)
{
	const struct vy_registry_entry *list[VY_REGISTRY_MAX];
	size_t n = vy_registry_list(list, VY_REGISTRY_MAX);
	cr_assert_geq(n, 1);
	cr_assert_leq(n, VY_REGISTRY_MAX);
	bool has_reference = false;
	for (size_t i = 0; i < n; i++) {
		has_reference = has_reference || strcmp(list[i]->id, VY_REFERENCE_ID) == 0;
		if (i > 0) {
			cr_assert_leq(list[i - 1]->precedence, list[i]->precedence,
				"%s listed before %s", list[i - 1]->id, list[i]->id);
		}
	}
	cr_assert(has_reference, "the reference backend is always compiled in");
	cr_assert_eq(vy_registry_list(NULL, 0), n, "the count does not depend on the room given");
}

Test(registry, finds_entries_by_id)
{
	const struct vy_registry_entry *e = vy_registry_find(VY_REFERENCE_ID);
	cr_assert_not_null(e);
	cr_assert_str_eq(e->id, VY_REFERENCE_ID);
	cr_assert_null(vy_registry_find("cuda"));
	cr_assert_null(vy_registry_find(""));
}

Test(registry, opens_the_reference_with_the_requested_subgroup_size)
{
	struct vy_registry_options opts = {.subgroup_size = 32};
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_registry_open(VY_REFERENCE_ID, &opts, &b, &err), 0, "%s", err.message);
	cr_assert_str_eq(b->id, VY_REFERENCE_ID);
	cr_assert_eq(vy_backend_subgroup_size(b), 32);
	vy_backend_destroy(b);

	cr_assert_eq(vy_registry_open(VY_REFERENCE_ID, NULL, &b, &err), 0, "%s", err.message);
	cr_assert_eq(vy_backend_subgroup_size(b), VY_REFERENCE_DEFAULT_SUBGROUP_SIZE,
		"no options means the backend's defaults");
	vy_backend_destroy(b);
}

Test(registry, passes_a_factory_error_through)
{
	struct vy_registry_options opts = {.subgroup_size = 3};
	struct vy_backend *b = (struct vy_backend *)&opts;
	struct vy_err err = {0};
	cr_assert_eq(vy_registry_open(VY_REFERENCE_ID, &opts, &b, &err), VY_E_BAD_REQUEST);
	cr_assert_null(b, "a failed open leaves no backend behind");
	cr_assert_neq(err.fix[0], '\0', "the factory's error keeps its Fix line");
}

Test(registry, refuses_an_unknown_id_naming_the_compiled_in_ones)
{
	struct vy_backend *b = (struct vy_backend *)&b;
	struct vy_err err = {0};
	cr_assert_eq(vy_registry_open("cuda", NULL, &b, &err), VY_E_NOT_FOUND);
	cr_assert_null(b);
	cr_assert(strstr(err.message, "cuda"), "%s", err.message);
	cr_assert(strstr(err.message, VY_REFERENCE_ID), "%s", err.message);
	cr_assert_neq(err.fix[0], '\0');
}

Test(registry, opens_the_first_available_backend_in_precedence_order)
{
	const struct vy_registry_entry *list[VY_REGISTRY_MAX];
	size_t n = vy_registry_list(list, VY_REGISTRY_MAX);
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_registry_open_first(NULL, &b, &err), 0, "%s", err.message);
	cr_assert_not_null(b);
	/* Every backend listed before the one that opened must have failed to open. */
	for (size_t i = 0; i < n && strcmp(list[i]->id, b->id) != 0; i++) {
		struct vy_backend *other = NULL;
		cr_assert_neq(vy_registry_open(list[i]->id, NULL, &other, NULL), 0,
			"%s opens, so it should have been chosen before %s", list[i]->id, b->id);
	}
	vy_backend_destroy(b);
}

Test(registry, opens_all_backends_and_records_why_others_failed)
{
	struct vy_registry_set set;
	size_t opened = vy_registry_open_all(NULL, &set);
	cr_assert_eq(set.len, vy_registry_list(NULL, 0), "every compiled-in backend is tried");
	size_t seen = 0;
	bool reference = false;
	for (size_t i = 0; i < set.len; i++) {
		struct vy_registry_opened *o = &set.items[i];
		if (o->backend) {
			seen++;
			cr_assert_eq(o->err.code, 0);
			cr_assert_str_eq(o->backend->id, o->entry->id);
			reference = reference || strcmp(o->entry->id, VY_REFERENCE_ID) == 0;
		} else {
			cr_assert_lt(o->err.code, 0, "%s failed without saying why", o->entry->id);
		}
	}
	cr_assert_eq(seen, opened);
	cr_assert(reference, "the reference always opens");
	vy_registry_set_finish(&set);
	cr_assert_eq(set.len, 0);
	vy_registry_set_finish(NULL);
}
