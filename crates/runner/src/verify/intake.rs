//! Where definitions and workloads are found (a flashinfer_trace folder, or one workloads file).
use super::*;

/// Where definitions and workloads are found.
pub(super) struct Dataset {
    root: PathBuf,
    only_workloads: Option<PathBuf>,
}

pub(super) fn find_file(dir: &Path, file_name: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            dirs.push(path);
        } else if path.file_name().and_then(|n| n.to_str()) == Some(file_name) {
            return Some(path);
        }
    }
    dirs.sort();
    dirs.iter().find_map(|d| find_file(d, file_name))
}

impl Dataset {
    pub(super) fn new(args: &VerifyArgs) -> Result<Dataset> {
        if let Some(file) = &args.workloads {
            let root = file.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_default();
            return Ok(Dataset { root, only_workloads: Some(file.clone()) });
        }
        match &args.definition {
            Some(dir) if dir.join("definitions").is_dir() => Ok(Dataset { root: dir.clone(), only_workloads: None }),
            Some(dir) => {
                bail!("--definition {}: not a flashinfer_trace folder (no definitions/ inside)", dir.display())
            }
            None => bail!("give --definition DIR (a flashinfer_trace folder) or --workloads FILE"),
        }
    }

    pub(super) fn definition(&self, name: &str) -> Result<(Definition, String)> {
        let path = find_file(&self.root.join("definitions"), &format!("{name}.json"))
            .ok_or_else(|| anyhow!("no definition `{name}` under {}", self.root.join("definitions").display()))?;
        let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
        let definition = Definition::parse(&text, &path.display().to_string())?;
        Ok((definition, text))
    }

    pub(super) fn workloads_file(&self, name: &str) -> Option<PathBuf> {
        match &self.only_workloads {
            Some(file) => Some(file.clone()),
            None => find_file(&self.root.join("workloads"), &format!("{name}.jsonl")),
        }
    }

    pub(super) fn names_with_workloads(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut stack = vec![self.root.join("workloads")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Some(stem) =
                    path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl"))
                {
                    names.push(stem.to_string());
                }
            }
        }
        if let Some(file) = &self.only_workloads
            && let Some(stem) = file.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl"))
        {
            names = vec![stem.to_string()];
        }
        names.sort();
        names
    }
}

/// What the intake accepted and refused: implementations (solutions, then the baselines asked for)
/// and their definitions.
pub(super) struct Intake {
    pub(super) implementations: Vec<Implementation>,
    pub(super) definitions: BTreeMap<String, (Definition, String)>,
    pub(super) refused: Vec<IntakeError>,
}

/// Every document parsed and validated; a refused one is reported with its file and JSON pointer.
pub(super) fn intake(args: &VerifyArgs, dataset: &Dataset) -> Result<Intake> {
    let mut refused: Vec<IntakeError> = Vec::new();
    let mut implementations: Vec<Implementation> = Vec::new();
    let mut definitions: BTreeMap<String, (Definition, String)> = BTreeMap::new();
    for path in &args.solutions {
        match Solution::read(path) {
            Err(error) => refused.push(error),
            Ok(solution) => {
                if !definitions.contains_key(&solution.definition) {
                    match dataset.definition(&solution.definition) {
                        Ok(found) => {
                            definitions.insert(solution.definition.clone(), found);
                        }
                        Err(error) => {
                            refused.push(IntakeError {
                                file: path.display().to_string(),
                                pointer: "/definition".into(),
                                reason: format!("{error:#}"),
                            });
                            continue;
                        }
                    }
                }
                if dataset.workloads_file(&solution.definition).is_none() {
                    refused.push(IntakeError {
                        file: path.display().to_string(),
                        pointer: "/definition".into(),
                        reason: format!("definition `{}` has no workloads in the data set", solution.definition),
                    });
                    continue;
                }
                let file = path.display().to_string();
                if let Some(existing) = implementations.iter_mut().find(|i| i.key == solution.source_digest) {
                    if let Entry::Solution { files, .. } = &mut existing.entry {
                        files.push(file);
                    }
                    continue;
                }
                implementations.push(Implementation {
                    key: solution.source_digest.clone(),
                    definition: solution.definition.clone(),
                    entry: Entry::Solution { solution: Box::new(solution), files: vec![file] },
                    workloads: Default::default(),
                });
            }
        }
    }
    for error in &refused {
        say!("refused at intake: {error}");
    }
    if args.baseline {
        let names: Vec<String> = if !args.only.is_empty() {
            args.only.clone()
        } else if args.solutions.is_empty() {
            dataset.names_with_workloads()
        } else {
            let mut n: Vec<String> = implementations.iter().map(|i| i.definition.clone()).collect();
            n.sort();
            n.dedup();
            n
        };
        for name in names {
            if !definitions.contains_key(&name) {
                definitions.insert(name.clone(), dataset.definition(&name)?);
            }
            implementations.insert(
                0,
                Implementation {
                    key: format!("baseline:{name}"),
                    definition: name,
                    entry: Entry::Baseline,
                    workloads: Default::default(),
                },
            );
        }
    }
    Ok(Intake { implementations, definitions, refused })
}
