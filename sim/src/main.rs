//! `ward`: the command-line program of ward (SPEC §12).
#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ward_sim::cli::{bugs, call, redact, replay, run, tools};

#[global_allocator]
static ALLOCATOR: heap::MiMalloc = heap::MiMalloc;

/// The global allocator: mimalloc, reached through its plain entry points whenever the
/// layout allows.
///
/// A campaign allocates and frees millions of small blocks (JSON values, strings, records).
/// mimalloc hands out blocks whose sizes are whole machine words from pages that start
/// 16-byte aligned, so every block it returns is at least word-aligned; a layout that asks
/// for no more than that (nearly all of them) takes `mi_malloc`'s fast path. Only stricter
/// alignments go through `mi_malloc_aligned`, which otherwise looks for a suitably aligned
/// block first and often falls to its generic path.
#[allow(unsafe_code)]
mod heap {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;

    use libmimalloc_sys as mi;

    /// The alignment of every block mimalloc returns: one machine word.
    const WORD: usize = std::mem::size_of::<usize>();

    /// mimalloc as the global allocator.
    pub struct MiMalloc;

    // SAFETY: every method forwards to mimalloc, which returns blocks of at least the asked
    // size aligned to at least `WORD` bytes (or to `layout.align()` through the `_aligned`
    // entry points), frees any block it returned with `mi_free`, and keeps a block's
    // contents on `mi_realloc`. (mimalloc itself takes its plain path for alignments up to a
    // word. The word alignment holds for the release build used here; mimalloc's debug
    // build with guard pages, a libmimalloc-sys feature this crate does not turn on, can
    // place small blocks against a guard page without it.)
    unsafe impl GlobalAlloc for MiMalloc {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: see the impl.
            unsafe {
                if layout.align() <= WORD {
                    mi::mi_malloc(layout.size()).cast()
                } else {
                    mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: see the impl.
            unsafe {
                if layout.align() <= WORD {
                    mi::mi_zalloc(layout.size()).cast()
                } else {
                    mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from this allocator.
            unsafe { mi::mi_free(ptr.cast::<c_void>()) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: `ptr` came from this allocator with `layout`.
            unsafe {
                if layout.align() <= WORD {
                    mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
                } else {
                    mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn blocks_keep_their_alignment_and_contents() {
            let heap = MiMalloc;
            for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
                for size in [1, 3, 8, 12, 24, 40, 100, 1000, 5000, 70_000] {
                    let layout = Layout::from_size_align(size, align).unwrap();
                    // SAFETY: a non-zero layout; each block is freed with its layout.
                    unsafe {
                        let block = heap.alloc(layout);
                        assert!(!block.is_null());
                        assert_eq!(block as usize % align, 0, "size {size}, align {align}");
                        block.write_bytes(0xA5, size);
                        let grown = heap.realloc(block, layout, size * 3);
                        assert_eq!(grown as usize % align, 0, "size {size}, align {align}");
                        assert!((0..size).all(|at| *grown.add(at) == 0xA5));
                        heap.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                        let zeroed = heap.alloc_zeroed(layout);
                        assert_eq!(zeroed as usize % align, 0);
                        assert!((0..size).all(|at| *zeroed.add(at) == 0));
                        heap.dealloc(zeroed, layout);
                    }
                }
            }
        }
    }
}

/// A deterministic simulation, property-testing and fuzzing harness for the tool runtime of
/// an AI chart agent.
#[derive(Parser, Debug)]
#[command(name = "ward", version, about, long_about = None)]
struct Ward {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs a simulation campaign over a range of seeds.
    Run(run::RunArgs),
    /// Reruns one seed or scenario file and reports what it breaks.
    Replay(replay::ReplayArgs),
    /// Lists the seeded bug catalogue.
    Bugs(bugs::BugsArgs),
    /// Redacts standard input to standard output (secrets, keys, home paths).
    Redact(redact::RedactArgs),
    /// Lists the tool catalogue.
    Tools(tools::ToolsArgs),
    /// Runs one tool call on a fresh default chart; standard input is the raw argument text.
    Call(call::CallArgs),
}

fn main() -> ExitCode {
    let ward = Ward::parse();
    match ward.command {
        Some(Command::Tools(args)) => tools::run(&args),
        Some(Command::Call(args)) => call::run(&args),
        Some(Command::Run(args)) => run::run(&args),
        Some(Command::Replay(args)) => replay::run(&args),
        Some(Command::Bugs(args)) => bugs::run(&args),
        Some(Command::Redact(args)) => redact::run(&args),
        None => run::run(&run::RunArgs::default()),
    }
}
