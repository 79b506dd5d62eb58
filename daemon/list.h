/*
 * An intrusive doubly-linked list, as libuv's queue.h and wlroots' wl_list do it: the link lives
 * inside the object, so queues of clients, jobs and waiting requests never allocate. An empty
 * list is a head that points at itself.
 *
 * Thread-safety: none; every list is guarded by whoever owns it (the loop thread, or a device's
 * lock for the scheduler queues).
 */
#ifndef VY_DAEMON_LIST_H
#define VY_DAEMON_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct vy_link {
	struct vy_link *prev;
	struct vy_link *next;
};

#define VY_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void vy_list_init(struct vy_link *head)
{
	head->prev = head;
	head->next = head;
}

static inline bool vy_list_empty(const struct vy_link *head)
{
	return head->next == head;
}

/* Whether `link` sits in a list (links are initialized unlinked, pointing at themselves). */
static inline bool vy_link_linked(const struct vy_link *link)
{
	return link->next != link;
}

static inline void vy_list_insert_tail(struct vy_link *head, struct vy_link *link)
{
	link->prev = head->prev;
	link->next = head;
	head->prev->next = link;
	head->prev = link;
}

static inline void vy_list_insert_head(struct vy_link *head, struct vy_link *link)
{
	link->next = head->next;
	link->prev = head;
	head->next->prev = link;
	head->next = link;
}

static inline void vy_list_remove(struct vy_link *link)
{
	link->prev->next = link->next;
	link->next->prev = link->prev;
	link->prev = link;
	link->next = link;
}

/* Move every element of `from` to the tail of `to`, leaving `from` empty. */
static inline void vy_list_splice(struct vy_link *to, struct vy_link *from)
{
	if (vy_list_empty(from)) {
		return;
	}
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	vy_list_init(from);
}

#define VY_LIST_FOR_EACH_SAFE(pos, tmp, head)                                                      \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                           \
		(pos) = (tmp), (tmp) = (pos)->next)

#endif
