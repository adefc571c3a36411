//! Planning without a device: every buffer a command reads or writes was
//! made before and not yet given back, each made buffer is given back
//! once or handed to the caller, and a replay on a machine that does
//! nothing takes and gives back memory as the plan says.

use super::*;
use crate::backends::cpu::storage::tests::{attention, compiled};
use std::cell::Cell;

/// Walks `program`'s commands as a machine would, checking that buffers
/// are made before use and given back at most once; the buffers alive at
/// the end.
fn check_buffers(program: &Program) -> Result<Vec<bool>, String> {
    let mut alive = vec![false; program.buffers];
    for value in &program.inputs {
        if let Some(b) = value.buffer() {
            alive[b as usize] = true;
        }
    }
    let read = |alive: &[bool], b: Buffer, what: &str| -> Result<(), String> {
        if alive[b as usize] {
            Ok(())
        } else {
            Err(format!("{what} reads buffer {b}, which is not alive"))
        }
    };
    for (k, command) in program.commands.iter().enumerate() {
        let at = format!("command {k} ({command:?})");
        match command {
            Command::Alloc { buffer, .. } => {
                if alive[*buffer as usize] {
                    return Err(format!("{at} makes a buffer that is alive"));
                }
                alive[*buffer as usize] = true;
            }
            Command::Release(b) => {
                read(&alive, *b, &at)?;
                alive[*b as usize] = false;
            }
            Command::Launch { operands, out, .. } => {
                for operand in operands {
                    if let Operand::Buffer(b) = operand {
                        read(&alive, *b, &at)?;
                        if b == out {
                            return Err(format!("{at} reads its own output"));
                        }
                    }
                }
                read(&alive, *out, &at)?;
            }
            Command::Gemm {
                operands: (a, b),
                out,
                ..
            } => {
                for buffer in [a, b, out] {
                    read(&alive, *buffer, &at)?;
                }
            }
            Command::Copy { src, dst, .. } => {
                read(&alive, *src, &at)?;
                read(&alive, *dst, &at)?;
            }
            Command::Loop { operands, out, .. } | Command::OnHost { operands, out, .. } => {
                for b in operands.iter().filter_map(Place::buffer) {
                    read(&alive, b, &at)?;
                }
                if let Some(b) = out.buffer() {
                    alive[b as usize] = true;
                }
            }
            Command::Allreduce { operand, out, .. } => {
                if let Some(b) = operand.buffer() {
                    read(&alive, b, &at)?;
                }
                if let Some(b) = out.buffer() {
                    alive[b as usize] = true;
                }
            }
            Command::Routine { reads, writes, .. } => {
                for b in reads.iter().chain(writes) {
                    read(&alive, *b, &at)?;
                }
            }
            Command::Check { codes, .. } => read(&alive, *codes, &at)?,
            Command::Host { .. } | Command::Measure { .. } => {}
        }
    }
    for value in &program.outputs {
        if let Some(b) = value.buffer() {
            read(&alive, b, "a result")?;
        }
    }
    Ok(alive)
}

#[test]
fn every_buffer_is_made_before_use_and_given_back_once() {
    // An attention block and its gradient, with f32 storage: products,
    // views, groups, reductions, widening and narrowing.
    let (graph, roots) = attention(2, 8, 16, 2);
    let tape = compiled(&graph, &roots, 5);
    for kinds in [[Kind::Device; 5], [Kind::F32; 5]] {
        let program = plan(&tape, &kinds).unwrap();
        let alive = check_buffers(&program).unwrap();
        // What is alive at the end is an input or a result.
        let kept: Vec<Buffer> = program
            .inputs
            .iter()
            .chain(&program.outputs)
            .filter_map(Place::buffer)
            .collect();
        for (b, alive) in alive.iter().enumerate() {
            assert!(
                !alive || kept.contains(&(b as Buffer)),
                "buffer {b} is never given back"
            );
        }
        assert!(program.kernels() >= tape.stats.fused_groups);
    }
}

/// A machine that does nothing: memory is its length; it counts what it
/// is asked for.
#[derive(Default)]
struct Counting {
    taken: Cell<usize>,
    given_back: Cell<usize>,
    launches: Cell<usize>,
    graphs: Cell<usize>,
    capturing: Cell<bool>,
    programs: Programs<Counting>,
}

impl Machine for Counting {
    type Mem = usize;
    type Graph = usize;

    fn alloc(&self, len: usize) -> Result<usize, BackendError> {
        self.taken.set(self.taken.get() + 1);
        Ok(len)
    }
    fn zeros(&self, len: usize) -> Result<usize, BackendError> {
        self.alloc(len)
    }
    fn upload(&self, data: &[f64]) -> Result<usize, BackendError> {
        self.alloc(data.len())
    }
    fn download(&self, _: &usize, len: usize) -> Result<Vec<f64>, BackendError> {
        Ok(vec![0.0; len])
    }
    fn launch(
        &self,
        _: &Launch,
        _: &[crate::backends::cuda::machine::Arg<'_, usize>],
        _: &mut usize,
    ) -> Result<(), BackendError> {
        if !self.capturing.get() {
            self.launches.set(self.launches.get() + 1);
        }
        Ok(())
    }
    fn gemm(
        &self,
        _: &GemmCall,
        _: (&usize, &usize),
        _: &mut usize,
        _: bool,
    ) -> Result<(), BackendError> {
        if !self.capturing.get() {
            self.launches.set(self.launches.get() + 1);
        }
        Ok(())
    }
    fn copy(
        &self,
        _: &usize,
        _: usize,
        _: &mut usize,
        _: usize,
        _: usize,
    ) -> Result<(), BackendError> {
        Ok(())
    }
    fn programs(&self) -> Option<&Programs<Counting>> {
        Some(&self.programs)
    }
    fn clear(&self, _: &mut usize) -> Result<(), BackendError> {
        Ok(())
    }
    fn begin_capture(&self) -> Result<bool, BackendError> {
        self.capturing.set(true);
        Ok(true)
    }
    fn end_capture(&self) -> Result<Option<usize>, BackendError> {
        self.capturing.set(false);
        Ok(Some(1))
    }
    fn launch_graph(&self, _: &usize) -> Result<(), BackendError> {
        self.graphs.set(self.graphs.get() + 1);
        Ok(())
    }
    fn release(&self, _: usize) {
        self.given_back.set(self.given_back.get() + 1);
    }
}

#[test]
fn a_replay_plans_nothing_and_gives_back_all_it_takes() {
    let (graph, roots) = attention(2, 8, 16, 2);
    let tape = compiled(&graph, &roots, 5);
    let machine = Counting::default();
    let inputs: Vec<Datum<usize>> = tape
        .input_shapes
        .iter()
        .map(|shape| Datum::device(shape.iter().product(), shape))
        .collect();
    crate::backends::device_stats::take();
    let mut launches = Vec::new();
    let mut kept = Vec::new();
    for _ in 0..3 {
        let (taken, back) = (machine.taken.get(), machine.given_back.get());
        let before = machine.launches.get();
        let outputs = run(&machine, &tape, &inputs).unwrap();
        assert_eq!(outputs.len(), tape.outputs.len());
        for output in outputs {
            crate::backends::cuda::machine::release(&machine, output);
        }
        kept.push((machine.taken.get() - taken) - (machine.given_back.get() - back));
        launches.push(machine.launches.get() - before);
    }
    // Every buffer a plain run or a graph's run takes is given back once
    // the results are; the run that captures the graph keeps its memory.
    assert_eq!((kept[0], kept[2]), (0, 0), "{kept:?}");
    assert!(kept[1] > 0, "{kept:?}");
    let stats = crate::backends::device_stats::take();
    assert_eq!(stats.programs_planned, 1, "planned at the first run only");
    assert_eq!(machine.programs.len(), 1);
    // The first run launches each kernel; the second captures a graph and
    // launches it, as the third does.
    assert!(launches[0] > 0, "{launches:?}");
    assert_eq!(launches[1..], [0, 0], "{launches:?}");
    assert_eq!(machine.graphs.get(), 2);
    // Other input kinds are another program.
    let single: Vec<Datum<usize>> = tape
        .input_shapes
        .iter()
        .map(|shape| Datum::single(shape.iter().product::<usize>().div_ceil(2), shape))
        .collect();
    run(&machine, &tape, &single).unwrap();
    assert_eq!(machine.programs.len(), 2);
}

#[test]
fn index_maps_feeding_a_group_are_read_through_not_materialized() {
    use crate::dtype::DType;
    use crate::ir::math::language::Math;
    use crate::ir::math::partials::PartialBuilder;
    use crate::ir::{TOp, TensorGraph};
    // sum((x[0:39] - roll(x[1:40], 1))^2 * broadcast(transpose(m)))
    let mut graph = TensorGraph::new();
    let x = graph.input(0, &[40], DType::F64);
    let m = graph.input(1, &[39, 1], DType::F64);
    let a = graph.add_valid(
        TOp::Slice {
            axis: 0,
            start: 0,
            end: 39,
        },
        &[x],
    );
    let b = graph.add_valid(
        TOp::Slice {
            axis: 0,
            start: 1,
            end: 40,
        },
        &[x],
    );
    let r = graph.add_valid(TOp::Roll { axis: 0, shift: 1 }, &[b]);
    let d = graph.map(Math::Sub([a, r]), &[a, r]);
    let t = graph.add_valid(TOp::Transpose([1, 0].into_iter().collect()), &[m]);
    let t = graph.reshape(t, &[39]);
    let w = graph.mul(d, d);
    let w = graph.mul(w, t);
    let loss = graph.sum_axes(w, &[0], false);
    let tape = compiled(&graph, &[loss], 2);
    let program = plan(&tape, &[Kind::Device, Kind::Device]).unwrap();
    let names: Vec<&str> = program
        .commands
        .iter()
        .filter_map(|c| match c {
            Command::Launch { launch, .. } => Some(launch.name),
            _ => None,
        })
        .collect();
    // The slices and the roll are read by the group; the transpose of a
    // column is materialized only because a reshape follows it.
    assert!(
        names.iter().filter(|n| **n == "index").count() <= 1,
        "{names:?}\n{tape}"
    );
    check_buffers(&program).unwrap();
}
