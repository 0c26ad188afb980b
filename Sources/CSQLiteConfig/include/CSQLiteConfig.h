#ifndef CSQLITECONFIG_H
#define CSQLITECONFIG_H

#include <sqlite3.h>

/// SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE for `db`: closing the last connection does not copy the WAL
/// into the database file. sqlite3_db_config is variadic, which Swift cannot call.
int sqlite3_db_config_no_checkpoint_on_close(sqlite3 *db);

/// Process-wide settings, before SQLite initialises (SQLITE_MISUSE once it has: they then stay
/// as they were, which costs speed, not correctness). sqlite3_config is variadic too.
/// - SQLITE_CONFIG_MULTITHREAD: no mutex around each call on a connection. GRDB already
///   serialises every use of a connection (its documented, supported mode), and the mutex was
///   taken and released several times per stored entry.
/// - SQLITE_CONFIG_MEMSTATUS off: no allocation statistics, which SQLite keeps under one mutex
///   that every allocation of every connection in the process takes (the two benchmark nodes
///   contended on it).
int sqlite3_config_for_serialised_connections(void);

#endif
