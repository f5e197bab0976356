/*
 * must_check.h -- DG_MUST_CHECK, the one mark of a function whose result the
 * caller must read: a status whose failure means the change did not happen
 * (or must be rolled back), a pointer the caller must free. As jansson marks
 * its constructors: a dropped result is a compile error under -Werror.
 */
#ifndef DG_MUST_CHECK_H
#define DG_MUST_CHECK_H

#define DG_MUST_CHECK __attribute__((warn_unused_result))

#endif
