// TANDEM_FAST_TLS: the TLS model of the engine's per-thread hot-path state (the current op, the
// drainer running on the thread, the record pools' caches).
//
// The engine is compiled position-independent (it may end up in a shared library), and there a
// thread_local defaults to the general-dynamic model: every access calls __tls_get_addr, ~15
// instructions, several times per op. The initial-exec model makes an access one %fs-relative
// load. Its one constraint is that the library's TLS block must be allocated at program start
// or fit in glibc's surplus static TLS when the library is dlopen'ed (a few hundred bytes are
// reserved for that, `glibc.rtld.optional_static_tls`); the engine's initial-exec variables
// total 48 bytes. Every such variable must also be constinit and trivially destructible, so the
// compiler emits no per-access initialisation wrapper.
#pragma once

#if defined(__GNUC__)
#define TANDEM_FAST_TLS __attribute__((tls_model("initial-exec")))
#else
#define TANDEM_FAST_TLS
#endif
