/*
 * The hostile-user suite (docs/security.md §3): one unprivileged user attacks a real daemon while
 * another user, or a crowd of checked clients, must be served as if nothing happened. The cases
 * live in test_iso_*.c, one file per kind of resource (shared memory, device and compile time,
 * bounded memory, caches and disk, privacy); they run as uids 61001 (attacker) and 61002
 * (victim), which need not exist, so the suite needs root. Each prints its figures on a line that
 * starts with "isolation:".
 */
#include <criterion/criterion.h>

#include "rel.h"

TestSuite(isolation, .fini = rel_fini, .timeout = 240);
