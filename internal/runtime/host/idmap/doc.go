// Package idmap owns id-mapped mounts: how the host shows one shared copy
// of a directory to a sandbox with the sandbox's own owners.
//
// # Why
//
// The namespace driver maps ids 0..65535 inside each sandbox's user
// namespace to a host range of its own (IDBase..IDBase+65535, different
// per sandbox), so that no two sandboxes, and no sandbox and the host,
// share an id. An image layer, though, is unpacked once into a shared,
// content-addressed store with the image's own owners (host uid 0, 1000,
// …, exactly as the tar said). Seen plainly from inside a sandbox those
// owners are unmapped: every file would belong to nobody, and root in the
// sandbox could not even read a directory of mode 0700.
//
// The alternative is to chown a copy of every layer into each sandbox's
// range, which costs time and disk in proportion to the image, for every
// sandbox. An id-mapped mount costs neither: the kernel translates owners
// at every access through the mount, through the sandbox's user
// namespace, so the file the store holds as uid 1000 is uid
// IDBase+1000 on the host side of that mount and uid 1000 inside the
// sandbox, and the bytes are never touched. Each sandbox gets its own
// read-only mount of the same directory.
//
// # How
//
// Mount clones the directory into a detached mount (open_tree) and marks it
// id-mapped, read-only, nosuid and nodev (mount_setattr). Attach moves such
// mounts onto directories inside the sandbox's mount namespace
// (move_mount), before the agent mounts its overlay root over them; the
// mounts exist only in that namespace and go away with it. The overlay the
// agent mounts inside its user namespace (with userxattr) takes the
// id-mapped directories as lower layers; copy-up into its upper directory
// keeps the owner the sandbox sees, which lands on disk in the sandbox's
// host range because the upper directory is not id-mapped.
//
// Needs: CAP_SYS_ADMIN in the initial user namespace, Linux 5.12 for
// id-mapped mounts, a filesystem that supports them (ext4, xfs, btrfs,
// tmpfs do), and Linux 5.19 for overlayfs to accept id-mapped lower
// layers. Supported finds out by trying.
//
// # Threads
//
// A mount namespace belongs to a thread, not to a process, and Go moves
// goroutines between threads at will. Attach therefore enters the
// target's mount namespace on a goroutine locked to its own OS thread,
// after unsharing that thread's filesystem attributes (setns refuses a
// thread that shares them, and the process's root and working directory
// must not move). It never unlocks the thread: the thread would go back to
// Go's scheduler still inside the sandbox's mount namespace, and any
// goroutine later scheduled on it would resolve paths there. Ending the
// goroutine while locked makes the runtime end the thread instead.
//
// Ending threads has a consequence for the rest of the process: a child
// started with Pdeathsig gets that signal when the thread that started it
// ends, not when the process does, so a child started from a thread that
// Attach later takes over would be killed. Start such children from a
// locked thread, or without Pdeathsig (the namespace driver uses none).
package idmap
