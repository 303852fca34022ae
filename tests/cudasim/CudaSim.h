//===- CudaSim.h - CUDA built-ins and a block scheduler for host C++ -*- C++ -*-===//
//
// Force-included (g++ -include) before an emitted translation unit compiled
// as host C++ with -DSNUG_CUDA_SIM (tests/cudasim/compile_kernels.sh). It
// provides what the prelude (compiler/cuda/CudaPrelude.cpp) and the kernels
// expect from CUDA: the qualifiers, threadIdx/blockIdx/blockDim/gridDim,
// __syncthreads, warp shuffles and votes, the bit-cast and math intrinsics,
// vector types, and atomics; and it defines the entry point the simulator
// (snug-cudasim) calls through dlsym:
//
//   int snug_cudasim_launch(void (*thunk)(void **), void **args,
//                           const unsigned grid[3], const unsigned block[3],
//                           const char *kernel, unsigned flags,
//                           char *error, size_t errorSize);
//
// The execution model. Blocks run one after another (blockIdx.x fastest).
// The threads of a block run as fibers in the calling OS thread, round-robin:
// each runs until it reaches a barrier (__syncthreads, a shuffle, a vote,
// __syncwarp) or finishes; when every thread of the block waits at the same
// barrier they all go on. A thread that never reaches a barrier runs to
// completion in one go. `__shared__` is `static`: since one block runs at a
// time, a static local is exactly the block's shared memory.
//
// Shuffles and votes are block-wide exchanges (write your value, barrier,
// read your source lane's), which is valid because the kernel rules
// (compiler/cuda/KernelEmitter.h) have every thread of a block call them
// together. The prelude's MMA emulation (snug_mma_m16n8k16) exchanges a
// warp's fragments the same way, in one barrier (gatherWarp). The simulator
// reports, naming the kernel, block and threads:
//   - threads waiting at a barrier while others of the block have finished
//     (a barrier in divergent code, or different barrier counts),
//   - threads waiting at different barriers (different source lines),
//   - a shuffle reading a lane outside the block (a partial warp),
//   - __trap(), dynamic shared memory (not supported).
//
// Flags: SNUG_CUDASIM_REVERSE runs the threads of each round in reverse
// order, SNUG_CUDASIM_SHUFFLE in a pseudo-random order per round, to expose
// missing barriers that the in-order schedule hides.
//
// Fibers: a thread starts with a call on a stack of its own (taken from a
// pool, 256 KiB and a guard page, SNUG_CUDASIM_STACK_KB), so one that
// finishes without reaching a barrier costs a call and a return, and gives
// its stack to the next thread. One that waits is resumed by a context
// switch: a few lines of x86-64 assembly (no system call); elsewhere, or
// with -DSNUG_CUDASIM_UCONTEXT, swapcontext (10-20 times slower).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_CUDASIM_CUDASIM_H
#define SNUG_TESTS_CUDASIM_CUDASIM_H

#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <math.h> // the float overloads of exp, fabs, ... in the global namespace
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__) || defined(SNUG_CUDASIM_UCONTEXT)
#define SNUG_CUDASIM_USE_UCONTEXT 1
#include <ucontext.h>
#endif

#define SNUG_CUDASIM_ABI_VERSION 1

//===----------------------------------------------------------------------===//
// Qualifiers
//===----------------------------------------------------------------------===//
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
// __restrict__ is a g++ keyword and stays.

//===----------------------------------------------------------------------===//
// Vector types
//===----------------------------------------------------------------------===//
#define SNUG_CUDASIM_VEC2(name, T, align)                                      \
  struct __attribute__((aligned(align))) name { T x, y; };                     \
  inline name make_##name(T x, T y) { return name{x, y}; }
#define SNUG_CUDASIM_VEC3(name, T)                                             \
  struct name { T x, y, z; };                                                  \
  inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define SNUG_CUDASIM_VEC4(name, T, align)                                      \
  struct __attribute__((aligned(align))) name { T x, y, z, w; };               \
  inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
SNUG_CUDASIM_VEC2(char2, signed char, 2)
SNUG_CUDASIM_VEC2(uchar2, unsigned char, 2)
SNUG_CUDASIM_VEC2(short2, short, 4)
SNUG_CUDASIM_VEC2(ushort2, unsigned short, 4)
SNUG_CUDASIM_VEC2(int2, int, 8)
SNUG_CUDASIM_VEC2(uint2, unsigned, 8)
SNUG_CUDASIM_VEC2(float2, float, 8)
SNUG_CUDASIM_VEC2(longlong2, long long, 16)
SNUG_CUDASIM_VEC2(ulonglong2, unsigned long long, 16)
SNUG_CUDASIM_VEC2(double2, double, 16)
SNUG_CUDASIM_VEC3(char3, signed char)
SNUG_CUDASIM_VEC3(uchar3, unsigned char)
SNUG_CUDASIM_VEC3(short3, short)
SNUG_CUDASIM_VEC3(int3, int)
SNUG_CUDASIM_VEC3(uint3, unsigned)
SNUG_CUDASIM_VEC3(float3, float)
SNUG_CUDASIM_VEC3(double3, double)
SNUG_CUDASIM_VEC4(char4, signed char, 4)
SNUG_CUDASIM_VEC4(uchar4, unsigned char, 4)
SNUG_CUDASIM_VEC4(short4, short, 8)
SNUG_CUDASIM_VEC4(ushort4, unsigned short, 8)
SNUG_CUDASIM_VEC4(int4, int, 16)
SNUG_CUDASIM_VEC4(uint4, unsigned, 16)
SNUG_CUDASIM_VEC4(float4, float, 16)
SNUG_CUDASIM_VEC4(longlong4, long long, 16)
SNUG_CUDASIM_VEC4(double4, double, 16)
#undef SNUG_CUDASIM_VEC2
#undef SNUG_CUDASIM_VEC3
#undef SNUG_CUDASIM_VEC4

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

//===----------------------------------------------------------------------===//
// The scheduler's state
//===----------------------------------------------------------------------===//
#define SNUG_CUDASIM_REVERSE 1u
#define SNUG_CUDASIM_SHUFFLE 2u

extern "C" void snug_cudasim_switch(void **save, void *next);
extern "C" void snug_cudasim_start(void **save, char *top, void **(*entry)());

namespace __attribute__((visibility("hidden"))) snug_cudasim {

enum : unsigned { kMaxThreads = 1024, kWarp = 32, kGatherWords = 8 };

enum ThreadState : unsigned char { Ready, Waiting, Done, Failed };
enum BarrierKind : unsigned char {
  SyncThreads,
  SyncWarp,
  Shuffle,
  Vote,
  SyncCount,
  Gather
};

inline const char *barrierName(unsigned kind) {
  switch (kind) {
  case SyncThreads: return "__syncthreads()";
  case SyncWarp: return "__syncwarp()";
  case Shuffle: return "a warp shuffle";
  case Vote: return "a warp vote";
  case Gather: return "a warp MMA (snug_mma_m16n8k16)";
  default: return "__syncthreads_count/and/or()";
  }
}

struct Thread {
  void *sp = nullptr; // saved stack pointer while switched out
#ifdef SNUG_CUDASIM_USE_UCONTEXT
  ucontext_t context;
#endif
  char *stack = nullptr; // lowest usable byte (a guard page lies below)
  uint3 index{0, 0, 0};
  unsigned linear = 0;
  ThreadState state = Ready;
  unsigned char barrierKind = 0;
  int barrierLine = 0;
  unsigned exchanges = 0; // shuffles, votes, gathers so far (buffer parity)
};

struct Context {
  // What the kernel reads as threadIdx, blockIdx, blockDim, gridDim; tid is
  // rewritten at every switch.
  uint3 tid{0, 0, 0}, bid{0, 0, 0};
  dim3 bdim{1, 1, 1}, gdim{1, 1, 1};
  Thread *current = nullptr;
  unsigned threadCount = 0;
  // The launch.
  void (*thunk)(void **) = nullptr;
  void **args = nullptr;
  const char *kernel = "?";
  bool inLaunch = false;
  bool failed = false;
  char error[1024] = {0};
  // Fibers, reused across blocks and launches.
  Thread threads[kMaxThreads];
  char *freeStack[kMaxThreads];
  unsigned freeStacks = 0;
  unsigned stacksMapped = 0;
  size_t stackBytes = 0;
  void *schedulerSp = nullptr;
#ifdef SNUG_CUDASIM_USE_UCONTEXT
  ucontext_t scheduler;
#endif
  // Shuffle and vote exchange, double-buffered by parity.
  uint64_t exchange[2][kMaxThreads];
  // The MMA emulation's exchange (gatherWarp), double-buffered by the same
  // parity: up to kGatherWords words per thread.
  uint32_t gather[2][kMaxThreads][kGatherWords];
  unsigned order[kMaxThreads];
  uint64_t rounds = 0; // barrier rounds over all blocks (statistics)
};

inline Context g;

} // namespace snug_cudasim

#define threadIdx (static_cast<const uint3 &>(::snug_cudasim::g.tid))
#define blockIdx (static_cast<const uint3 &>(::snug_cudasim::g.bid))
#define blockDim (static_cast<const dim3 &>(::snug_cudasim::g.bdim))
#define gridDim (static_cast<const dim3 &>(::snug_cudasim::g.gdim))
#define warpSize 32

//===----------------------------------------------------------------------===//
// The context switch
//===----------------------------------------------------------------------===//
#ifndef SNUG_CUDASIM_USE_UCONTEXT
// snug_cudasim_switch(save, next): pushes the callee-saved registers, stores
// the stack pointer in *save, loads `next` and pops the registers saved
// there. Weak and hidden: each object that includes this header may define
// it, one copy wins, and it stays inside the shared object.
__asm__(".text\n"
        ".weak snug_cudasim_switch\n"
        ".hidden snug_cudasim_switch\n"
        ".type snug_cudasim_switch,@function\n"
        "snug_cudasim_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size snug_cudasim_switch, .-snug_cudasim_switch\n"
        // snug_cudasim_start(save, top, entry): saves the registers and stack
        // pointer as snug_cudasim_switch does, calls entry() on the stack
        // ending at `top`, then switches to the stack pointer stored where
        // entry's result points. A thread that never waits thus costs a
        // predicted call and return; one that waited and was resumed
        // returns into the scheduler's latest switch.
        ".weak snug_cudasim_start\n"
        ".hidden snug_cudasim_start\n"
        ".type snug_cudasim_start,@function\n"
        "snug_cudasim_start:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  xorl %ebp, %ebp\n"
        "  callq *%rdx\n"
        "  movq (%rax), %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size snug_cudasim_start, .-snug_cudasim_start\n");
#endif

namespace __attribute__((visibility("hidden"))) snug_cudasim {

/// From a fiber back to the scheduler.
inline void toScheduler(Thread *t) {
  __asm__ __volatile__("" ::: "memory");
#ifdef SNUG_CUDASIM_USE_UCONTEXT
  swapcontext(&t->context, &g.scheduler);
#else
  snug_cudasim_switch(&t->sp, g.schedulerSp);
#endif
}

/// From the scheduler into thread `t`.
inline void toThread(Thread *t) {
  g.current = t;
  g.tid = t->index;
#ifdef SNUG_CUDASIM_USE_UCONTEXT
  swapcontext(&g.scheduler, &t->context);
#else
  snug_cudasim_switch(&g.schedulerSp, t->sp);
#endif
  __asm__ __volatile__("" ::: "memory");
}

#ifdef SNUG_CUDASIM_USE_UCONTEXT
/// Where a fiber starts: runs the kernel for the current thread, then
/// reports it done. Never returns (it was entered by a context switch).
[[noreturn]] inline void fiberMain() {
  g.thunk(g.args);
  Thread *t = g.current;
  t->state = Done;
  toScheduler(t);
  __builtin_trap();
}

inline void fiberMainC() { fiberMain(); }
#else
/// Runs the kernel for the current thread on its own stack, called by
/// snug_cudasim_start; returns where the scheduler's stack pointer is saved,
/// which snug_cudasim_start then switches to.
inline void **fiberEntry() {
  g.thunk(g.args);
  g.current->state = Done;
  __asm__ __volatile__("" ::: "memory");
  return &g.schedulerSp;
}
#endif

/// Starts thread `t` on its stack; returns when it finishes or first waits
/// at a barrier.
inline void startThread(Thread *t) {
  g.current = t;
  g.tid = t->index;
#ifdef SNUG_CUDASIM_USE_UCONTEXT
  getcontext(&t->context);
  t->context.uc_stack.ss_sp = t->stack;
  t->context.uc_stack.ss_size = g.stackBytes;
  t->context.uc_link = nullptr;
  makecontext(&t->context, fiberMainC, 0);
  swapcontext(&g.scheduler, &t->context);
#else
  // Stack tops are staggered by 64-byte lines (cache colouring: the hot
  // frames of suspended threads would otherwise share the same L1 sets).
  snug_cudasim_start(&g.schedulerSp,
                     t->stack + g.stackBytes - (t->linear & 63u) * 64u,
                     &fiberEntry);
#endif
  __asm__ __volatile__("" ::: "memory");
}

/// "kernel K, block (x,y,z), thread (x,y,z)".
inline int where(char *out, size_t size, const Thread *t) {
  if (!t)
    return std::snprintf(out, size, "kernel %s, block (%u,%u,%u)", g.kernel,
                         g.bid.x, g.bid.y, g.bid.z);
  return std::snprintf(out, size,
                       "kernel %s, block (%u,%u,%u), thread (%u,%u,%u)",
                       g.kernel, g.bid.x, g.bid.y, g.bid.z,
                       t->index.x, t->index.y, t->index.z);
}

/// Ends the launch with an error from inside a thread: the message, then
/// back to the scheduler for good.
[[noreturn]] inline void fail(const char *message) {
  Thread *t = g.current;
  if (!g.failed) {
    int n = where(g.error, sizeof g.error, t);
    if (n < 0 || size_t(n) >= sizeof g.error)
      n = 0;
    std::snprintf(g.error + n, sizeof g.error - n, ": %s", message);
    g.failed = true;
  }
  t->state = Failed;
  toScheduler(t);
  __builtin_trap();
}

/// Waits until every thread of the block reaches the barrier at `line`.
inline void barrier(BarrierKind kind, int line) {
  Thread *t = g.current;
  if (!g.inLaunch || !t)
    std::abort(); // a device function called outside a launch
  t->state = Waiting;
  t->barrierKind = (unsigned char)kind;
  t->barrierLine = line;
  toScheduler(t);
  __asm__ __volatile__("" ::: "memory");
}

inline void syncthreads(int line) { barrier(SyncThreads, line); }
inline void syncwarp(int line) { barrier(SyncWarp, line); }

/// The thread's lane in its warp, and the linear index of the warp's lane 0.
inline unsigned laneOf(const Thread *t) { return t->linear & (kWarp - 1); }
inline unsigned warpBase(const Thread *t) { return t->linear & ~(kWarp - 1u); }

/// The exchange behind shuffles and votes: every thread publishes `bits` in
/// the buffer of this exchange's parity (*parityOut) and waits for all; the
/// caller then reads the slots it needs. Two buffers suffice: before anyone
/// writes a buffer again, everyone has passed the next exchange's barrier,
/// so is done reading it.
inline uint64_t exchange(uint64_t bits, BarrierKind kind, int line,
                         unsigned *parityOut) {
  Thread *t = g.current;
  unsigned parity = t->exchanges++ & 1u;
  g.exchange[parity][t->linear] = bits;
  barrier(kind, line);
  *parityOut = parity;
  return bits;
}

enum ShuffleMode { ShflIdx, ShflUp, ShflDown, ShflXor };

template <class T>
inline T shuffle(unsigned mask, T value, int mode, int arg, int width,
                 int line) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  Thread *t = g.current;
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  unsigned parity;
  exchange(bits, Shuffle, line, &parity);
  if (width <= 0 || width > int(kWarp) || (width & (width - 1)))
    fail("shuffle width is not a power of two up to 32");
  unsigned lane = laneOf(t);
  unsigned segment = lane & ~unsigned(width - 1); // first lane of the segment
  int source;
  switch (mode) {
  case ShflIdx:
    source = int(segment) + (arg & (width - 1));
    break;
  case ShflUp:
    source = int(lane) - arg;
    if (source < int(segment))
      source = int(lane);
    break;
  case ShflDown:
    source = int(lane) + arg;
    if (source >= int(segment) + width)
      source = int(lane);
    break;
  default:
    source = int(lane ^ unsigned(arg));
    if (source < int(segment) || source >= int(segment) + width)
      source = int(lane);
    break;
  }
  if (!(mask >> lane & 1u))
    fail("a thread calls a shuffle whose mask leaves out its own lane");
  if (!(mask >> source & 1u)) {
    char message[160];
    std::snprintf(message, sizeof message,
                  "shuffle reads lane %d, which its mask 0x%08x leaves out",
                  source, mask);
    fail(message);
  }
  unsigned linear = warpBase(t) + unsigned(source);
  if (linear >= g.threadCount) {
    char message[200];
    std::snprintf(message, sizeof message,
                  "shuffle reads lane %d of a partial warp (the block has %u "
                  "threads; blocks must be multiples of 32)",
                  source, g.threadCount);
    fail(message);
  }
  bits = g.exchange[parity][linear];
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}

/// The ballot of the current warp over `mask`.
inline unsigned ballot(unsigned mask, int predicate, int line) {
  Thread *t = g.current;
  unsigned parity;
  exchange(predicate != 0, Vote, line, &parity);
  unsigned base = warpBase(t), result = 0;
  for (unsigned lane = 0; lane < kWarp; ++lane)
    if (base + lane < g.threadCount && (mask >> lane & 1u) &&
        g.exchange[parity][base + lane])
      result |= 1u << lane;
  return result;
}

/// The exchange behind the prelude's MMA emulation (snug_mma_m16n8k16 in
/// compiler/cuda/CudaPrelude.cpp): every thread publishes `count` words (at
/// most kGatherWords) and waits for all; the result is the current warp's
/// 32 lanes' words, valid until the thread's next exchange. One barrier
/// instead of the 32 shuffles a lane's fragment products need.
inline const uint32_t (*gatherWarp(const uint32_t *words, unsigned count,
                                   int line = __builtin_LINE()))[kGatherWords] {
  Thread *t = g.current;
  if (count > kGatherWords)
    fail("gatherWarp: more than 8 words per lane");
  unsigned parity = t->exchanges++ & 1u;
  std::memcpy(g.gather[parity][t->linear], words, count * sizeof(uint32_t));
  barrier(Gather, line);
  if (warpBase(t) + kWarp > g.threadCount)
    fail("a warp MMA in a partial warp (blocks must be multiples of 32 "
         "threads)");
  return g.gather[parity] + warpBase(t);
}

/// The lanes of the current warp that exist (the last warp may be partial).
inline unsigned activeMask() {
  unsigned base = warpBase(g.current), count = g.threadCount - base;
  return count >= kWarp ? 0xffffffffu : (1u << count) - 1u;
}

/// __syncthreads_count: the number of threads of the block with a true
/// predicate.
inline int syncCount(int predicate, int line) {
  unsigned parity;
  exchange(predicate != 0, SyncCount, line, &parity);
  int count = 0;
  for (unsigned i = 0; i < g.threadCount; ++i)
    count += g.exchange[parity][i] != 0;
  return count;
}

//===----------------------------------------------------------------------===//
// The block loop
//===----------------------------------------------------------------------===//

inline size_t pageBytes() {
  static size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

/// A fiber stack: the most recently freed one (hot in the caches), or a new
/// mapping; null with g.error set when none can be mapped. A thread that
/// finishes without reaching a barrier gives its stack back at once, so a
/// kernel without barriers runs every thread on the same stack.
inline char *takeStack() {
  if (g.freeStacks)
    return g.freeStack[--g.freeStacks];
  if (!g.stackBytes) {
    size_t kib = 256;
    if (const char *env = std::getenv("SNUG_CUDASIM_STACK_KB"))
      kib = size_t(std::strtoul(env, nullptr, 10));
    if (kib < 16)
      kib = 16;
    size_t page = pageBytes();
    g.stackBytes = (kib * 1024 + page - 1) / page * page;
  }
  // A guard region below each stack turns an overflow into SIGSEGV. A
  // whole mebibyte of it (address space only): a frame larger than the stack
  // first touches its locals at the stack pointer, far below the stack's end,
  // and past a single guard page that write could land in whatever mapping
  // lies below and overflow nothing (CudaSimExecutorDeathTest failed about
  // one run in five).
  size_t page = pageBytes() > (size_t(1) << 20) ? pageBytes() : size_t(1) << 20;
  void *base = mmap(nullptr, g.stackBytes + page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    std::snprintf(g.error, sizeof g.error,
                  "kernel %s: cannot map a fiber stack of %zu bytes",
                  g.kernel, g.stackBytes);
    return nullptr;
  }
  mprotect(base, page, PROT_NONE);
  ++g.stacksMapped;
  return static_cast<char *>(base) + page;
}

inline void giveBackStack(Thread *t) {
  if (t->stack) {
    g.freeStack[g.freeStacks++] = t->stack;
    t->stack = nullptr;
  }
}

/// Gives back the stacks of the block's suspended threads (after an error).
inline void giveBackAllStacks() {
  for (unsigned i = 0; i < g.threadCount; ++i)
    giveBackStack(&g.threads[i]);
}

/// The order of the threads in one round.
inline void makeOrder(unsigned count, unsigned flags, uint64_t &seed) {
  for (unsigned i = 0; i < count; ++i)
    g.order[i] = (flags & SNUG_CUDASIM_REVERSE) ? count - 1 - i : i;
  if (flags & SNUG_CUDASIM_SHUFFLE)
    for (unsigned i = count; i > 1; --i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      unsigned j = unsigned((seed >> 33) % i);
      unsigned tmp = g.order[i - 1];
      g.order[i - 1] = g.order[j];
      g.order[j] = tmp;
    }
}

/// Runs the current block (g.blockIdx) to completion; false with g.error set
/// on a failure.
inline bool runBlock(unsigned flags, uint64_t &seed) {
  unsigned count = g.threadCount;
  const dim3 dim = g.bdim;
  for (unsigned i = 0; i < count; ++i) {
    Thread &t = g.threads[i];
    t.linear = i;
    t.index = uint3{i % dim.x, (i / dim.x) % dim.y, i / (dim.x * dim.y)};
    t.state = Ready;
    t.exchanges = 0;
    t.stack = nullptr;
  }
  bool ordered = flags & (SNUG_CUDASIM_REVERSE | SNUG_CUDASIM_SHUFFLE);
  for (;;) {
    if (ordered)
      makeOrder(count, flags, seed);
    for (unsigned k = 0; k < count; ++k) {
      Thread *t = &g.threads[ordered ? g.order[k] : k];
      if (t->state != Ready)
        continue;
      if (!t->stack) { // not started yet
        t->stack = takeStack();
        if (!t->stack) {
          giveBackAllStacks();
          return false;
        }
        startThread(t);
      } else {
        toThread(t);
      }
      if (t->state == Done) {
        giveBackStack(t);
      } else if (t->state == Failed) {
        g.current = nullptr;
        giveBackAllStacks();
        return false;
      }
    }
    g.current = nullptr;
    // Every thread now waits at a barrier or is done.
    const Thread *done = nullptr, *waiting = nullptr;
    for (unsigned i = 0; i < count; ++i) {
      const Thread *t = &g.threads[i];
      if (t->state == Done) {
        if (!done)
          done = t;
      } else if (!waiting) {
        waiting = t;
      } else if (t->barrierLine != waiting->barrierLine ||
                 t->barrierKind != waiting->barrierKind) {
        int n = where(g.error, sizeof g.error, nullptr);
        std::snprintf(
            g.error + n, sizeof g.error - n,
            ": barrier divergence: thread (%u,%u,%u) waits at %s on line %d, "
            "thread (%u,%u,%u) at %s on line %d",
            waiting->index.x, waiting->index.y, waiting->index.z,
            barrierName(waiting->barrierKind), waiting->barrierLine,
            t->index.x, t->index.y, t->index.z, barrierName(t->barrierKind),
            t->barrierLine);
        giveBackAllStacks();
        return false;
      }
    }
    if (!waiting)
      return true;
    if (done) {
      int n = where(g.error, sizeof g.error, nullptr);
      std::snprintf(g.error + n, sizeof g.error - n,
                    ": barrier deadlock: thread (%u,%u,%u) waits at %s on "
                    "line %d, but thread (%u,%u,%u) has finished (a barrier "
                    "in divergent code, or different barrier counts)",
                    waiting->index.x, waiting->index.y, waiting->index.z,
                    barrierName(waiting->barrierKind), waiting->barrierLine,
                    done->index.x, done->index.y, done->index.z);
      giveBackAllStacks();
      return false;
    }
    ++g.rounds;
    for (unsigned i = 0; i < count; ++i)
      g.threads[i].state = Ready;
  }
}

} // namespace snug_cudasim

/// Runs `thunk` (a kernel's SYM_sim) over the grid; 0 on success, else 1
/// with a message in `error`.
extern "C" __attribute__((used, visibility("default"))) inline int
snug_cudasim_launch(void (*thunk)(void **), void **args,
                    const unsigned grid[3], const unsigned block[3],
                    const char *kernel, unsigned flags, char *error,
                    size_t errorSize) {
  using namespace snug_cudasim;
  uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  if (error && errorSize)
    error[0] = 0;
  if (!threads || threads > kMaxThreads || !grid[0] || !grid[1] ||
      !grid[2]) {
    std::snprintf(error, errorSize,
                  "kernel %s: bad launch: grid (%u,%u,%u), block (%u,%u,%u)",
                  kernel, grid[0], grid[1], grid[2], block[0], block[1],
                  block[2]);
    return 1;
  }
  if (g.inLaunch) {
    std::snprintf(error, errorSize, "kernel %s: launched inside a launch",
                  kernel);
    return 1;
  }
  g.thunk = thunk;
  g.args = args;
  g.kernel = kernel;
  g.bdim = dim3(block[0], block[1], block[2]);
  g.gdim = dim3(grid[0], grid[1], grid[2]);
  g.threadCount = unsigned(threads);
  g.failed = false;
  g.error[0] = 0;
  g.inLaunch = true;
  uint64_t seed = 0x853c49e6748fea9bull;
  bool ok = true;
  for (unsigned z = 0; ok && z < grid[2]; ++z)
    for (unsigned y = 0; ok && y < grid[1]; ++y)
      for (unsigned x = 0; ok && x < grid[0]; ++x) {
        g.bid = uint3{x, y, z};
        ok = runBlock(flags, seed);
      }
  g.inLaunch = false;
  g.current = nullptr;
  if (!ok) {
    std::snprintf(error, errorSize, "%s", g.error);
    return 1;
  }
  return 0;
}

/// Where the simulator is (for a crash report from a signal handler): "kernel
/// K, block (..), thread (..)", or "" outside a launch.
extern "C" __attribute__((used, visibility("default"))) inline int
snug_cudasim_where(char *out, size_t size) {
  using namespace snug_cudasim;
  if (!g.inLaunch) {
    if (size)
      out[0] = 0;
    return 0;
  }
  return where(out, size, g.current);
}

/// SNUG_CUDASIM_ABI_VERSION: the simulator checks that the kernels were
/// built against the header it expects.
extern "C" __attribute__((used, visibility("default"))) inline int
snug_cudasim_abi_version() {
  return SNUG_CUDASIM_ABI_VERSION;
}

/// Barrier rounds run so far (statistics).
extern "C" __attribute__((used, visibility("default"))) inline unsigned long long
snug_cudasim_rounds() {
  return snug_cudasim::g.rounds;
}

//===----------------------------------------------------------------------===//
// Synchronization, shuffles, votes. The trailing `line` parameter is the
// caller's line (__builtin_LINE()), so that threads waiting at different
// barriers are told apart.
//===----------------------------------------------------------------------===//
inline void __syncthreads(int line = __builtin_LINE()) {
  ::snug_cudasim::barrier(::snug_cudasim::SyncThreads, line);
}
inline void __syncwarp(unsigned /*mask*/ = 0xffffffffu,
                       int line = __builtin_LINE()) {
  ::snug_cudasim::barrier(::snug_cudasim::SyncWarp, line);
}
inline int __syncthreads_count(int predicate, int line = __builtin_LINE()) {
  return ::snug_cudasim::syncCount(predicate, line);
}
inline int __syncthreads_and(int predicate, int line = __builtin_LINE()) {
  return ::snug_cudasim::syncCount(predicate, line) ==
         int(::snug_cudasim::g.threadCount);
}
inline int __syncthreads_or(int predicate, int line = __builtin_LINE()) {
  return ::snug_cudasim::syncCount(predicate, line) != 0;
}
template <class T>
inline T __shfl_sync(unsigned mask, T value, int lane, int width = 32,
                     int line = __builtin_LINE()) {
  return ::snug_cudasim::shuffle<T>(mask, value, ::snug_cudasim::ShflIdx,
                                    lane, width, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T value, unsigned delta,
                        int width = 32, int line = __builtin_LINE()) {
  return ::snug_cudasim::shuffle<T>(mask, value, ::snug_cudasim::ShflUp,
                                    int(delta), width, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T value, unsigned delta,
                          int width = 32, int line = __builtin_LINE()) {
  return ::snug_cudasim::shuffle<T>(mask, value, ::snug_cudasim::ShflDown,
                                    int(delta), width, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T value, int laneMask,
                         int width = 32, int line = __builtin_LINE()) {
  return ::snug_cudasim::shuffle<T>(mask, value, ::snug_cudasim::ShflXor,
                                    laneMask, width, line);
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              int line = __builtin_LINE()) {
  return ::snug_cudasim::ballot(mask, predicate, line);
}
inline int __any_sync(unsigned mask, int predicate,
                      int line = __builtin_LINE()) {
  return ::snug_cudasim::ballot(mask, predicate, line) != 0u;
}
inline int __all_sync(unsigned mask, int predicate,
                      int line = __builtin_LINE()) {
  return ::snug_cudasim::ballot(mask, predicate, line) ==
         (mask & ::snug_cudasim::activeMask());
}

inline unsigned __activemask() { return ::snug_cudasim::activeMask(); }
inline unsigned __lanemask_lt() {
  return (1u << (threadIdx.x & 31u)) - 1u; // 1-D blocks
}
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
[[noreturn]] inline void __trap() { ::snug_cudasim::fail("__trap()"); }
[[noreturn]] inline void __brkpt() { ::snug_cudasim::fail("__brkpt()"); }
inline long long clock64() {
  static long long ticks = 0;
  return ++ticks;
}

//===----------------------------------------------------------------------===//
// Bit casts and conversions
//===----------------------------------------------------------------------===//
inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
inline int __float_as_int(float f) { int x; std::memcpy(&x, &f, 4); return x; }
inline float __uint_as_float(unsigned x) { float f; std::memcpy(&f, &x, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned x; std::memcpy(&x, &f, 4); return x; }
inline double __longlong_as_double(long long x) { double d; std::memcpy(&d, &x, 8); return d; }
inline long long __double_as_longlong(double d) { long long x; std::memcpy(&x, &d, 8); return x; }
inline int __double2hiint(double d) { return int(__double_as_longlong(d) >> 32); }
inline int __double2loint(double d) { return int(__double_as_longlong(d)); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

namespace __attribute__((visibility("hidden"))) snug_cudasim {
/// CUDA's saturating float-to-integer conversion: NaN gives 0, out of range
/// the nearest limit.
template <class I, class F> inline I saturate(F value) {
  if (value != value)
    return 0;
  if (value <= F(std::numeric_limits<I>::min()))
    return std::numeric_limits<I>::min();
  if (value >= F(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return I(value);
}
} // namespace snug_cudasim

#define SNUG_CUDASIM_CVT(name, I, F, round)                                    \
  inline I name(F x) { return ::snug_cudasim::saturate<I>(round(x)); }
SNUG_CUDASIM_CVT(__float2int_rn, int, float, rintf)
SNUG_CUDASIM_CVT(__float2int_rz, int, float, truncf)
SNUG_CUDASIM_CVT(__float2int_rd, int, float, floorf)
SNUG_CUDASIM_CVT(__float2int_ru, int, float, ceilf)
SNUG_CUDASIM_CVT(__float2uint_rn, unsigned, float, rintf)
SNUG_CUDASIM_CVT(__float2uint_rz, unsigned, float, truncf)
SNUG_CUDASIM_CVT(__float2uint_rd, unsigned, float, floorf)
SNUG_CUDASIM_CVT(__float2uint_ru, unsigned, float, ceilf)
SNUG_CUDASIM_CVT(__float2ll_rn, long long, float, rintf)
SNUG_CUDASIM_CVT(__float2ll_rz, long long, float, truncf)
SNUG_CUDASIM_CVT(__float2ll_rd, long long, float, floorf)
SNUG_CUDASIM_CVT(__float2ll_ru, long long, float, ceilf)
SNUG_CUDASIM_CVT(__float2ull_rn, unsigned long long, float, rintf)
SNUG_CUDASIM_CVT(__float2ull_rz, unsigned long long, float, truncf)
SNUG_CUDASIM_CVT(__double2int_rn, int, double, rint)
SNUG_CUDASIM_CVT(__double2int_rz, int, double, trunc)
SNUG_CUDASIM_CVT(__double2int_rd, int, double, floor)
SNUG_CUDASIM_CVT(__double2int_ru, int, double, ceil)
SNUG_CUDASIM_CVT(__double2uint_rn, unsigned, double, rint)
SNUG_CUDASIM_CVT(__double2uint_rz, unsigned, double, trunc)
SNUG_CUDASIM_CVT(__double2ll_rn, long long, double, rint)
SNUG_CUDASIM_CVT(__double2ll_rz, long long, double, trunc)
SNUG_CUDASIM_CVT(__double2ll_rd, long long, double, floor)
SNUG_CUDASIM_CVT(__double2ll_ru, long long, double, ceil)
SNUG_CUDASIM_CVT(__double2ull_rn, unsigned long long, double, rint)
SNUG_CUDASIM_CVT(__double2ull_rz, unsigned long long, double, trunc)
#undef SNUG_CUDASIM_CVT
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }
inline float __ll2float_rn(long long x) { return float(x); }
inline float __ull2float_rn(unsigned long long x) { return float(x); }
inline double __int2double_rn(int x) { return double(x); }
inline double __ll2double_rn(long long x) { return double(x); }
inline double __ull2double_rn(unsigned long long x) { return double(x); }
inline float __double2float_rn(double x) { return float(x); }

//===----------------------------------------------------------------------===//
// Math: the fast intrinsics as their accurate versions, the CUDA-only
// functions, and min/max for every arithmetic pair as CUDA has them.
//===----------------------------------------------------------------------===//
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float *s, float *c) { *s = sinf(x); *c = cosf(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __fdiv_rn(float x, float y) { return x / y; }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fsub_rn(float x, float y) { return x - y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline double __dadd_rn(double x, double y) { return x + y; }
inline double __dmul_rn(double x, double y) { return x * y; }
inline double __ddiv_rn(double x, double y) { return x / y; }
inline double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
inline double __drcp_rn(double x) { return 1.0 / x; }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float sinpif(float x) { return sinf(float(M_PI) * x); }
inline float cospif(float x) { return cosf(float(M_PI) * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * float(M_SQRT1_2)); }
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
inline float fdividef(float x, float y) { return x / y; }

#define SNUG_CUDASIM_MINMAX(T)                                                 \
  inline T min(T a, T b) { return b < a ? b : a; }                             \
  inline T max(T a, T b) { return a < b ? b : a; }
SNUG_CUDASIM_MINMAX(int)
SNUG_CUDASIM_MINMAX(unsigned)
SNUG_CUDASIM_MINMAX(long)
SNUG_CUDASIM_MINMAX(unsigned long)
SNUG_CUDASIM_MINMAX(long long)
SNUG_CUDASIM_MINMAX(unsigned long long)
#undef SNUG_CUDASIM_MINMAX
// Mixed signedness goes unsigned, as in CUDA.
inline unsigned min(int a, unsigned b) { return min(unsigned(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, unsigned(b)); }
inline unsigned max(int a, unsigned b) { return max(unsigned(a), b); }
inline unsigned max(unsigned a, int b) { return max(a, unsigned(b)); }
inline long long min(int a, long long b) { return min((long long)a, b); }
inline long long min(long long a, int b) { return min(a, (long long)b); }
inline long long max(int a, long long b) { return max((long long)a, b); }
inline long long max(long long a, int b) { return max(a, (long long)b); }
inline long min(int a, long b) { return min((long)a, b); }
inline long min(long a, int b) { return min(a, (long)b); }
inline long max(int a, long b) { return max((long)a, b); }
inline long max(long a, int b) { return max(a, (long)b); }
inline unsigned long long min(long long a, unsigned long long b) { return min((unsigned long long)a, b); }
inline unsigned long long min(unsigned long long a, long long b) { return min(a, (unsigned long long)b); }
inline unsigned long long max(long long a, unsigned long long b) { return max((unsigned long long)a, b); }
inline unsigned long long max(unsigned long long a, long long b) { return max(a, (unsigned long long)b); }
// Floating point: fminf/fmaxf (a NaN operand gives the other one).
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(double(a), b); }
inline double min(double a, float b) { return fmin(a, double(b)); }
inline double max(float a, double b) { return fmax(double(a), b); }
inline double max(double a, float b) { return fmax(a, double(b)); }
inline unsigned umin(unsigned a, unsigned b) { return min(a, b); }
inline unsigned umax(unsigned a, unsigned b) { return max(a, b); }
inline long long llmin(long long a, long long b) { return min(a, b); }
inline long long llmax(long long a, long long b) { return max(a, b); }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return min(a, b); }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return max(a, b); }

//===----------------------------------------------------------------------===//
// Integer intrinsics
//===----------------------------------------------------------------------===//
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev(unsigned(x)) << 32) | __brev(unsigned(x >> 32));
}
inline int __mulhi(int a, int b) { return int(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __hadd(int a, int b) { return int(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return int(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b + 1) >> 1); }
inline unsigned __sad(int a, int b, unsigned c) { return unsigned(a > b ? a - b : b - a) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return unsigned((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long v = ((unsigned long long)hi << 32) | lo;
  return unsigned(v >> (shift & 31u));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned result = 0;
  for (int i = 0; i < 4; ++i)
    result |= unsigned((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return result;
}

//===----------------------------------------------------------------------===//
// Loads and stores with cache hints: plain accesses
//===----------------------------------------------------------------------===//
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline T __ldca(const T *p) { return *p; }
template <class T> inline T __ldcg(const T *p) { return *p; }
template <class T> inline T __ldcs(const T *p) { return *p; }
template <class T> inline T __ldlu(const T *p) { return *p; }
template <class T> inline T __ldcv(const T *p) { return *p; }
template <class T> inline void __stwb(T *p, T v) { *p = v; }
template <class T> inline void __stcg(T *p, T v) { *p = v; }
template <class T> inline void __stcs(T *p, T v) { *p = v; }
template <class T> inline void __stwt(T *p, T v) { *p = v; }

//===----------------------------------------------------------------------===//
// Atomics: fibers never preempt each other, so read-modify-write is atomic.
//===----------------------------------------------------------------------===//
template <class T, class V> inline T atomicAdd(T *p, V v) { T old = *p; *p = T(old + v); return old; }
template <class T, class V> inline T atomicSub(T *p, V v) { T old = *p; *p = T(old - v); return old; }
template <class T, class V> inline T atomicExch(T *p, V v) { T old = *p; *p = T(v); return old; }
template <class T, class V> inline T atomicMin(T *p, V v) { T old = *p; if (T(v) < old) *p = T(v); return old; }
template <class T, class V> inline T atomicMax(T *p, V v) { T old = *p; if (old < T(v)) *p = T(v); return old; }
template <class T, class V> inline T atomicAnd(T *p, V v) { T old = *p; *p = T(old & v); return old; }
template <class T, class V> inline T atomicOr(T *p, V v) { T old = *p; *p = T(old | v); return old; }
template <class T, class V> inline T atomicXor(T *p, V v) { T old = *p; *p = T(old ^ v); return old; }
template <class T, class C, class V> inline T atomicCAS(T *p, C compare, V v) {
  T old = *p;
  if (old == T(compare))
    *p = T(v);
  return old;
}
inline unsigned atomicInc(unsigned *p, unsigned limit) {
  unsigned old = *p;
  *p = old >= limit ? 0u : old + 1u;
  return old;
}
inline unsigned atomicDec(unsigned *p, unsigned limit) {
  unsigned old = *p;
  *p = (old == 0u || old > limit) ? limit : old - 1u;
  return old;
}

#endif // SNUG_TESTS_CUDASIM_CUDASIM_H
