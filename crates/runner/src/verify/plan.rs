//! Plans: every (workload, trial) of a definition as both workers receive it, its inputs synthesized
//! by the family's rule, and the spread of workloads a solution runs on.
use super::*;

pub(super) fn spec_shape(spec: &crate::definition::TensorSpec, axes: &BTreeMap<String, usize>) -> Vec<usize> {
    spec.shape.as_deref().unwrap_or(&[]).iter().map(|a| axes.get(a).copied().unwrap_or(0)).collect()
}

impl Session {
    pub(super) fn plan_definition(&self, definition: &Definition, file: &Path) -> Result<Vec<WorkloadPlans>> {
        let mut lines: Vec<WorkloadCase> =
            read_workloads(file)?.into_iter().filter(|l| l.definition == definition.name).map(|l| l.workload).collect();
        if let Some(limit) = self.args.limit
            && limit < lines.len()
        {
            // Spread from the smallest to the largest workload, in file order.
            let mut by_size: Vec<(f64, usize)> = lines
                .iter()
                .enumerate()
                .map(|(i, w)| (w.axes.values().map(|&v| v.max(1) as f64).product::<f64>(), i))
                .collect();
            by_size.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut keep: Vec<usize> = (0..limit)
                .map(|k| by_size[if limit <= 1 { 0 } else { k * (by_size.len() - 1) / (limit - 1) }].1)
                .collect();
            keep.sort();
            keep.dedup();
            lines = keep.into_iter().map(|i| lines[i].clone()).collect();
        }
        let dir = self.scratch.join("plans").join(&definition.name);
        std::fs::create_dir_all(&dir)?;
        let inputs = definition.input_specs().map_err(|e| anyhow!(e))?;
        let outputs = definition.output_specs().map_err(|e| anyhow!(e))?;
        let mut all = Vec::new();
        for (index, case) in lines.into_iter().enumerate() {
            match self.plan_workload(definition, &case, index, &dir, &inputs, &outputs) {
                Ok(plans) => all.push(plans),
                Err(error) => {
                    let reason = format!("{error:#}");
                    say!("workload {} of {}: not run: {}", case.uuid, definition.name, reason);
                    self.invalid.lock().unwrap().push((definition.name.clone(), case.uuid.clone(), reason));
                }
            }
        }
        Ok(all)
    }

    pub(super) fn plan_workload(
        &self,
        definition: &Definition,
        case: &WorkloadCase,
        index: usize,
        dir: &Path,
        inputs: &[crate::definition::TensorSpec],
        outputs: &[crate::definition::TensorSpec],
    ) -> Result<WorkloadPlans> {
        let case = case.clone();
        {
            let axes = families::resolved_axes(definition, &case)?;
            let workload_seed = tensor_seed(self.seed, &format!("{}/{}", definition.name, case.uuid));
            let mut trials = Vec::new();
            let mut synthesized_names = Vec::new();
            let mut drawn_random = Vec::new();
            for t in 0..self.args.trials {
                let seed = trial_seed(workload_seed, t);
                let made = families::synthesize(definition, &case, &axes, seed)?;
                let file = dir.join(format!("w{index}-t{t}.safetensors"));
                if !made.synthesized.tensors.is_empty() {
                    made.synthesized.write(&file)?;
                }
                let mut tensors = Vec::new();
                for spec in inputs {
                    let shape = spec_shape(spec, &axes);
                    let source = case.inputs.get(&spec.name);
                    let entry = match source {
                        Some(InputSource::Scalar { value }) => {
                            json!({"name": spec.name, "source": "scalar", "dtype": spec.dtype.definition_name(), "value": value})
                        }
                        Some(InputSource::Safetensors { .. }) if made.synthesized.get(&spec.name).is_some() => {
                            json!({"name": spec.name, "source": "file", "dtype": spec.dtype.definition_name(), "shape": shape, "path": file.display().to_string(), "key": spec.name})
                        }
                        _ => {
                            json!({"name": spec.name, "source": "random", "dtype": spec.dtype.definition_name(), "shape": shape,
                                "seed": tensor_seed(seed, &spec.name) & 0x7fff_ffff_ffff_ffff})
                        }
                    };
                    tensors.push(entry);
                }
                let outs: Vec<Value> = outputs
                    .iter()
                    .map(|s| json!({"name": s.name, "dtype": s.dtype.definition_name(), "shape": spec_shape(s, &axes)}))
                    .collect();
                let bound = families::bound(definition, &axes, &made.synthesized);
                trials.push(TrialPlan {
                    json: json!({"workload": case.uuid, "trial": t, "seed": seed, "tensors": tensors, "outputs": outs}),
                    bound,
                    expert_work: families::moe::expert_work(definition, &axes),
                    routed: std::sync::OnceLock::new(),
                });
                synthesized_names = made.synthesized_names.clone();
                drawn_random = made.drawn_random.clone();
            }
            Ok(WorkloadPlans { case, trials, synthesized: synthesized_names, drawn_random })
        }
    }
}

/// `n` workloads spread from the smallest to the largest (by the product of their axes).
pub(super) fn spread(plans: &[WorkloadPlans], n: usize) -> Vec<usize> {
    let mut order: Vec<(f64, usize)> = plans
        .iter()
        .enumerate()
        .map(|(i, w)| (w.case.axes.values().map(|&v| (v.max(1)) as f64).product::<f64>(), i))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut picked: Vec<usize> =
        (0..n.max(1)).map(|k| order[if n <= 1 { 0 } else { k * (order.len() - 1) / (n - 1) }].1).collect();
    picked.sort();
    picked.dedup();
    picked
}
