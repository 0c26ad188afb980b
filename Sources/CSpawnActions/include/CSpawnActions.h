#ifndef CSPAWNACTIONS_H
#define CSPAWNACTIONS_H

#include <spawn.h>

/// File actions of glibc's that Swift's Glibc module does not show (they need _GNU_SOURCE).
/// Each returns 0 or an errno value, as the posix_spawn_file_actions_* functions do.

/// Closes every descriptor from `lowest` up in the child (glibc 2.34; on other systems 0, and
/// the caller uses POSIX_SPAWN_CLOEXEC_DEFAULT instead).
int replica_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/// Changes the child's working directory (glibc 2.29, macOS 10.15).
int replica_spawn_change_directory(posix_spawn_file_actions_t *actions, const char *path);

/// A pipe whose two ends are close-on-exec from the start (pipe2 on Linux; elsewhere pipe,
/// then fcntl: a spawn on another thread in between could pass them on).
int replica_pipe_close_on_exec(int fds[2]);

#endif
