/*
 * jail_ids: which uid (= gid) a sandbox's jailed kiln-vmm gets, from
 * kilnd's --jail-ids range. Pure: the caller lists the ids live
 * sandboxes hold (under the registry lock), says which id it gave last
 * (kept in <state-dir>/jail-ids.last across restarts) and records the
 * pick.
 */
#ifndef KILN_KILND_JAIL_IDS_H
#define KILN_KILND_JAIL_IDS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The first id of first .. first + count - 1 after `last` (the id given
 * before; 0 or outside the range: from `first`), going round the range,
 * that is not in used[0..n) (any order, duplicates and ids outside the
 * range allowed; used is sorted in place). 0 when every id of the range
 * is taken or the range is empty or reaches 0 or 2^32 - 1.
 */
uint32_t jail_id_pick(uint32_t first, uint32_t count, uint32_t *used, size_t n, uint32_t last);

#endif
