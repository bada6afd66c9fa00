//! The programs' answer checks at small sizes: every workload runs once and must check its own
//! answer. Nothing here looks at a duration (STYLE.md: benchmarks measure, tests assert).

use pcml_bench::programs::micro::{
    Placement, bare_switch, fiber_spawn_join, fiber_yield, task_spawn_join,
};
use pcml_bench::programs::spawn::{os_threads, tokio_tasks};
use pcml_bench::programs::weigh::{fiber_batches, task_batches};
use pcml_bench::programs::{fig9, triangle};
use pcml_bench::runner::Sample;

fn one_sample(samples: Vec<Sample>, ops: u64) {
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].ops, ops);
    assert!(samples[0].seconds > 0.0);
}

#[test]
fn bare_corosensei_switch_counts_its_round_trips() {
    one_sample(bare_switch(1000, 1).unwrap(), 1000);
}

#[test]
fn fiber_yield_takes_turns_on_one_and_two_procs() {
    for procs in [1, 2] {
        one_sample(fiber_yield(procs, 500, 1).unwrap(), 1000);
    }
}

#[test]
fn fiber_spawn_join_sums_its_children() {
    one_sample(fiber_spawn_join(1, Placement::Any, 300, 1).unwrap(), 300);
    one_sample(fiber_spawn_join(2, Placement::Any, 300, 1).unwrap(), 300);
    one_sample(
        fiber_spawn_join(2, Placement::OtherProc, 300, 1).unwrap(),
        300,
    );
}

#[test]
fn task_spawn_join_sums_its_children() {
    for procs in [1, 2] {
        one_sample(task_spawn_join(procs, 300, 2).unwrap()[..1].to_vec(), 300);
    }
}

#[test]
fn os_threads_and_tokio_sum_their_children() {
    one_sample(os_threads(20, 1).unwrap(), 20);
    one_sample(tokio_tasks(0, 300, 1).unwrap(), 300);
    one_sample(tokio_tasks(2, 300, 1).unwrap(), 300);
}

#[test]
fn batches_of_fibers_and_tasks_sum_each_batch() {
    one_sample(fiber_batches(50, 3, 1).unwrap(), 150);
    one_sample(task_batches(50, 3, 1).unwrap(), 150);
}

#[test]
fn figure9_primitives_count_their_operations() {
    one_sample(fig9::proc_datum(1000, 1).unwrap(), 1000);
    one_sample(fig9::spin_lock(1000, 1).unwrap(), 1000);
    one_sample(fig9::failed_try_lock(1000, 1).unwrap(), 1000);
}

#[test]
fn triangle_is_the_sum_below_n() {
    assert_eq!(triangle(0), 0);
    assert_eq!(triangle(1), 0);
    assert_eq!(triangle(5), 10);
}

#[test]
fn ping_pong_sums_the_replies() {
    use pcml_bench::programs::{parpingpong, pingpong};
    for procs in [1, 2] {
        one_sample(pingpong::fibers(procs, 200, 1).unwrap(), 200);
        one_sample(pingpong::tasks(procs, 200, 1).unwrap(), 200);
        one_sample(pingpong::tasks_async(procs, 200, 1).unwrap(), 200);
        one_sample(parpingpong::fibers(procs, 320, 1).unwrap(), 320);
    }
}

#[test]
fn primes_sieve_finds_the_nth_prime() {
    use pcml_bench::programs::primes::{Kind, first_primes, measure};
    assert_eq!(first_primes(2000).last(), Some(&17389));
    for procs in [1, 2] {
        for kind in [Kind::Fibers, Kind::Tasks] {
            one_sample(measure(procs, 50, kind, 1).unwrap(), 50);
        }
    }
}

#[test]
fn skynet_sums_its_leaves() {
    use pcml_bench::programs::skynet::{Kind, measure};
    for procs in [1, 2] {
        one_sample(measure(procs, 729, 3, Kind::Fibers, 1).unwrap(), 729);
        one_sample(measure(procs, 1000, 10, Kind::Tasks, 1).unwrap(), 1000);
    }
    assert!(measure(1, 10, 1, Kind::Tasks, 1).is_err());
}

#[test]
fn seed000_actor_programs_check_their_answers() {
    use pcml_bench::programs::seed000::Kind;
    use pcml_bench::programs::{actor_skynet, bitonic, bombing};
    for procs in [1, 2] {
        for kind in Kind::BOTH {
            one_sample(
                actor_skynet::measure_paper(procs, 3, kind, 1, 2).unwrap(),
                2,
            );
            one_sample(bombing::measure(procs, 1, 50, kind, 1, 2).unwrap(), 2);
            one_sample(bombing::measure(procs, 2, 50, kind, 1, 2).unwrap(), 2);
            one_sample(bitonic::measure(procs, 32, kind, 1, 2).unwrap(), 2);
        }
        one_sample(
            actor_skynet::measure_wide(procs, 1000, 10, Kind::Async, 1).unwrap(),
            1000,
        );
        one_sample(
            actor_skynet::measure_wide(procs, 100, 10, Kind::Fibers, 1).unwrap(),
            100,
        );
    }
    assert_eq!(bitonic::actors(32), 64);
    assert!(bitonic::measure(1, 24, Kind::Fibers, 1, 1).is_err());
    assert!(bombing::measure(1, 3, 10, Kind::Fibers, 1, 1).is_err());
    assert!(actor_skynet::measure_wide(1, 10, 1, Kind::Async, 1).is_err());
}

#[test]
fn seed001_programs_check_their_answers_in_both_styles() {
    use pcml_bench::programs::kpn::{self, Style, hamming};
    use pcml_bench::programs::{sieve, sorter};
    assert_eq!(hamming(1691).last(), Some(&2_125_764_000));
    for style in [Style::Direct, Style::Indirect] {
        one_sample(kpn::measure(200, style, 1).unwrap(), 200);
        one_sample(sieve::measure(50, style, 1).unwrap(), 50);
        one_sample(sorter::measure(20, style, false, 1).unwrap(), 190);
        one_sample(sorter::measure(20, style, true, 1).unwrap(), 190);
    }
    assert_eq!(sorter::comparators(100).len(), 4950);
}

#[test]
fn memory_probes_run_in_process() {
    use pcml_bench::programs::probe;
    for kind in ["fibers", "tasks"] {
        probe("sorter", kind, 20, 0).unwrap();
        probe("sorter-d", kind, 20, 0).unwrap();
        probe("skynet", kind, 100, 10).unwrap();
        probe("actor-skynet", kind, 3, 0).unwrap();
        probe("actor-skynet", kind, 100, 10).unwrap();
        probe("bombing1", kind, 20, 0).unwrap();
        probe("bombing2", kind, 20, 0).unwrap();
        probe("bitonic", kind, 16, 0).unwrap();
    }
    assert!(probe("nope", "tasks", 1, 1).is_err());
    assert!(probe("sorter", "threads", 10, 0).is_err());
}

#[test]
fn figure10_programs_match_their_sequential_answers() {
    use pcml_bench::programs::{abisort, allpairs, matrix, mst};
    for procs in [1, 2] {
        one_sample(matrix::measure(procs, 20, 1).unwrap(), 20);
        one_sample(allpairs::measure(procs, 12, 1).unwrap(), 144);
        one_sample(mst::measure(procs, 40, 1).unwrap(), 40);
        one_sample(abisort::measure(procs, 1024, 1).unwrap(), 1024);
    }
    assert!(abisort::measure(1, 1000, 1).is_err());
}

#[test]
fn rust_peers_of_seed003_and_skynet_check_their_answers() {
    use pcml_bench::programs::{parpingpong, pingpong, primes, skynet};
    // 0: tokio's current_thread runtime; 2: a multi_thread runtime of 2 workers.
    for workers in [0, 2] {
        one_sample(pingpong::tokio_tasks(workers, 200, 1).unwrap(), 200);
        one_sample(parpingpong::tokio_tasks(workers, 320, 1).unwrap(), 320);
        one_sample(primes::tokio_tasks(workers, 50, 1).unwrap(), 50);
        one_sample(skynet::tokio_tasks(workers, 729, 3, 1).unwrap(), 729);
        one_sample(skynet::tokio_tasks(workers, 1000, 10, 1).unwrap(), 1000);
    }
    assert!(skynet::tokio_tasks(0, 10, 1, 1).is_err());
    one_sample(pingpong::crossbeam_threads(200, 1).unwrap(), 200);
    one_sample(parpingpong::crossbeam_threads(320, 1).unwrap(), 320);
    one_sample(primes::crossbeam_threads(50, 1).unwrap(), 50);
}

#[test]
fn worker_pools_check_their_results() {
    use pcml_bench::programs::workerpool;
    for procs in [1, 2] {
        one_sample(workerpool::fibers(procs, 1000, 1).unwrap(), 1000);
    }
    one_sample(workerpool::crossbeam_threads(1000, 1).unwrap(), 1000);
}
