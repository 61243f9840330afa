//! Upload authority is write authority: what a file may change is decided by the catalog's
//! write rules (docs/API.md, "Writes: master data and catalogue"), the same that JSON writes follow. Each file type writes records
//! of some resources ([`writes`]); a file's part name fixes the records they hang from (its
//! brand, its warehouse, its host), from which the rules are judged: at upload (403 before
//! anything is stored) and again when the file is processed, for the uploader as it is then.
//! A rule no fixed record decides (a warehouse user dispatches only its warehouse's orders)
//! is left to the processor, which checks each record it touches. A fixed record that written
//! records name by a foreign key (a price file's host) must also be one the uploader sees,
//! the rule of a JSON write's links ([`Target::unseen`]).

use brandhub_catalog::{Res, Resource, Scope, UserType, WriteAction, catalog};
use brandhub_problem::Words;
use brandhub_query::judge::{Judgement, Known, Verdict, judge};
use brandhub_query::plan::Viewer;
use brandhub_sheet::FileType;
use brandhub_store::StoreResult;
use brandhub_store::records::links;
use brandhub_store::rights::{Reads, seen_ids, verdict};

/// A record as a message names it: `"name" (code)`, or what of those it has, else its id.
pub fn label_of(name: &str, code: &str, id: &str) -> String {
    match (name.is_empty(), code.is_empty()) {
        (false, false) => format!("\"{name}\" ({code})"),
        (false, true) => format!("\"{name}\""),
        (true, false) => code.to_string(),
        (true, true) => id.to_string(),
    }
}

/// What a file of this type writes: the resources and the action on them.
pub fn writes(file_type: FileType) -> &'static [(Res, WriteAction)] {
    match file_type {
        FileType::Product => &[
            (Res::Product, WriteAction::Write),
            (Res::Variant, WriteAction::Write),
        ],
        FileType::Image => &[(Res::Image, WriteAction::Write)],
        FileType::Price => &[(Res::Price, WriteAction::Write)],
        FileType::Stock => &[(Res::Stock, WriteAction::Write)],
        FileType::OrderDispatch => &[
            (Res::Order, WriteAction::Dispatch),
            (Res::OrderItem, WriteAction::Dispatch),
        ],
    }
}

/// Whether a user of `user_type` may upload files of this type at all: the catalog lets it
/// write (some records of) every resource the file writes. Which records it may write is
/// judged per file ([`Target::verdict`]).
pub fn may_upload(file_type: FileType, user_type: UserType) -> bool {
    writes(file_type)
        .iter()
        .all(|(res, action)| catalog().get(*res).authority_of(*action, user_type) != Scope::Nothing)
}

/// Whether the processor of this file type checks each record it touches against the
/// uploader's rights (an orderDispatch file: each row's order), so that a rule the part name
/// leaves open is decided there rather than refusing the file.
pub fn checked_per_record(file_type: FileType) -> bool {
    file_type == FileType::OrderDispatch
}

/// The records a file's part name fixes: every record it writes hangs from them.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub file_type: FileType,
    pub brand: &'a str,
    pub warehouse: Option<&'a str>,
    pub host: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// The records the part name fixes, by resource.
    fn fixed(&self) -> Vec<(Res, &'a str)> {
        let mut fixed = vec![(Res::Brand, self.brand)];
        fixed.extend(self.warehouse.map(|warehouse| (Res::Warehouse, warehouse)));
        fixed.extend(self.host.map(|host| (Res::Host, host)));
        fixed
    }

    fn known(&self) -> Known {
        self.fixed()
            .into_iter()
            .fold(Known::new(), |known, (resource, id)| {
                known.record(resource, id)
            })
    }

    /// The fixed records that written records name by a foreign key (a price's host, a stock
    /// record's warehouse, a product's brand), with their resources.
    fn linked(&self) -> Vec<(&'static Resource, &'a str)> {
        let fixed = self.fixed();
        let mut linked: Vec<(&'static Resource, &'a str)> = Vec::new();
        for (res, _) in writes(self.file_type) {
            let resource = catalog().get(*res);
            for (field, target) in links(resource) {
                // A foreign key the record's writer names (not one derived from others).
                if !resource.writes.create.contains(&field.path.as_str()) {
                    continue;
                }
                let Some((_, id)) = fixed.iter().find(|(fixed, _)| target.is(*fixed)) else {
                    continue;
                };
                if !linked.iter().any(|(seen, _)| std::ptr::eq(*seen, target)) {
                    linked.push((target, id));
                }
            }
        }
        linked
    }

    /// The first fixed record a written record would name that `viewer` does not see (or
    /// that does not exist), as (resource name, id): a JSON write naming it is refused by the
    /// rule of its links ([`seen_ids`]), and so is the file: 404 at upload, the same answer
    /// as for a record that does not exist; failed at processing.
    pub async fn unseen<R: Reads>(
        &self,
        reader: &mut R,
        viewer: &Viewer,
    ) -> StoreResult<Option<(&'static str, &'a str)>> {
        for (resource, id) in self.linked() {
            let ids = [id.to_string()];
            if seen_ids(reader, resource, &ids, viewer).await?.is_empty() {
                return Ok(Some((resource.name, id)));
            }
        }
        Ok(None)
    }

    /// Each written resource's rule for `viewer`, judged from the fixed records.
    fn judgements(&self, viewer: &Viewer) -> Vec<(&'static Resource, WriteAction, Judgement)> {
        let known = self.known();
        writes(self.file_type)
            .iter()
            .map(|(res, action)| {
                let resource = catalog().get(*res);
                let rule = resource.authority_of(*action, viewer.user_type());
                (resource, *action, judge(resource, &rule, viewer, &known))
            })
            .collect()
    }

    /// Whether `viewer` may write what the file writes: `No` when any written resource is
    /// refused, `Open` when some rule waits for the records themselves.
    pub async fn verdict<R: Reads>(&self, reader: &mut R, viewer: &Viewer) -> StoreResult<Verdict> {
        let mut overall = Verdict::Yes;
        for (_, _, judgement) in self.judgements(viewer) {
            match verdict(reader, &judgement).await? {
                Verdict::No => return Ok(Verdict::No),
                Verdict::Open => overall = Verdict::Open,
                Verdict::Yes => {}
            }
        }
        Ok(overall)
    }

    /// The record a refusal names: the warehouse, if the part name has one, else the brand,
    /// as (resource name, id).
    pub fn refused_record(&self) -> (Res, &'a str) {
        match self.warehouse {
            Some(warehouse) => (Res::Warehouse, warehouse),
            None => (Res::Brand, self.brand),
        }
    }

    /// Why a refused file is refused, for its uploader's type; `label` names the
    /// [`Target::refused_record`] (by [`label_of`]).
    pub fn refusal(&self, viewer: &Viewer, label: &str) -> Words {
        let names: Vec<&str> = writes(self.file_type)
            .iter()
            .map(|(res, _)| res.name())
            .collect();
        let action = writes(self.file_type)
            .first()
            .map_or("write", |(_, action)| action.as_str());
        let of = format!("{} {label}", self.refused_record().0.name());
        let (kind, file) = (viewer.user_type().as_str(), self.file_type.as_str());
        Words::new(
            format!(
                "a {kind} user may not {action} {} records of {of}, which a {file} file does",
                names.join(" and ")
            ),
            format!(
                "ein Benutzer vom Typ {kind} darf keine Datensätze {} von {of} schreiben, was eine Datei vom Typ {file} tut",
                names.join(" und ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_types_of_uploads_are_the_catalogs() {
        let names: Vec<&str> = FileType::ALL.into_iter().map(FileType::as_str).collect();
        assert_eq!(names, brandhub_catalog::FILE_TYPES);
    }

    #[test]
    fn who_may_upload_which_file_types() {
        let offered = |user_type| {
            FileType::ALL
                .into_iter()
                .filter(|t| may_upload(*t, user_type))
                .map(FileType::as_str)
                .collect::<Vec<_>>()
        };
        assert_eq!(offered(UserType::Admin).len(), FileType::ALL.len());
        assert_eq!(offered(UserType::Company).len(), FileType::ALL.len());
        assert_eq!(offered(UserType::Warehouse), ["stock", "orderDispatch"]);
        assert!(offered(UserType::Host).is_empty());
    }

    #[test]
    fn every_file_type_writes_declared_resources() {
        for file_type in FileType::ALL {
            let written = writes(file_type);
            assert!(!written.is_empty());
            for (res, _) in written {
                assert!(catalog().get(*res).is(*res), "{res}");
            }
        }
    }

    #[test]
    fn the_records_written_records_link_to_are_those_judged_for_sight() {
        let (brand, warehouse, host) = ("B", "W", "H");
        let target = |file_type| Target {
            file_type,
            brand,
            warehouse: (file_type == FileType::Stock).then_some(warehouse),
            host: (file_type == FileType::Price).then_some(host),
        };
        for (file_type, expected) in [
            (FileType::Price, vec![(Res::Host.name(), host)]),
            (FileType::Stock, vec![(Res::Warehouse.name(), warehouse)]),
            (FileType::Product, vec![(Res::Brand.name(), brand)]),
            (FileType::Image, vec![]),
            (FileType::OrderDispatch, vec![]),
        ] {
            let linked: Vec<(&str, &str)> = target(file_type)
                .linked()
                .into_iter()
                .map(|(resource, id)| (resource.name, id))
                .collect();
            assert_eq!(linked, expected, "{file_type:?}");
        }
    }

    #[test]
    fn the_part_name_decides_what_it_can() {
        let brand = "0190AAAAAAAAAAAAAAAAAAAAAAAAAAA1";
        let warehouse = "0190BBBBBBBBBBBBBBBBBBBBBBBBBBB1";
        let target = |file_type| Target {
            file_type,
            brand,
            warehouse: (file_type == FileType::Stock).then_some(warehouse),
            host: None,
        };
        let keeper = Viewer::new(
            brandhub_catalog::UserType::Warehouse,
            "U",
            Vec::new(),
            None,
            Some(warehouse.into()),
        );
        // A warehouse user's own stock is decided by the part name alone; its dispatches
        // wait for the orders; a catalogue is never its to write.
        for (file_type, expected) in [
            (FileType::Stock, Some(Verdict::Yes)),
            (FileType::OrderDispatch, Some(Verdict::Open)),
            (FileType::Product, Some(Verdict::No)),
            (FileType::Price, Some(Verdict::No)),
            (FileType::Image, Some(Verdict::No)),
        ] {
            let judgements = target(file_type).judgements(&keeper);
            let verdicts: Vec<Verdict> = judgements
                .iter()
                .map(|(_, _, judgement)| {
                    assert!(judgement.record_checks().is_empty(), "{file_type:?}");
                    judgement.verdict(&[])
                })
                .collect();
            assert!(
                verdicts.iter().all(|v| Some(*v) == expected),
                "{file_type:?}: {verdicts:?}"
            );
        }
        // A company user's rights are those of the brand's (or warehouse's) company.
        let owner = Viewer::new(
            brandhub_catalog::UserType::Company,
            "U",
            vec!["C".into()],
            None,
            None,
        );
        for file_type in FileType::ALL {
            for (resource, _, judgement) in target(file_type).judgements(&owner) {
                let checks = judgement.record_checks();
                assert_eq!(checks.len(), 1, "{file_type:?} {}", resource.name);
                let expected = if file_type == FileType::Stock {
                    "warehouse"
                } else {
                    "brand"
                };
                assert_eq!(checks[0].0.name, expected);
            }
        }
        assert!(
            target(FileType::Price)
                .refusal(&keeper, "\"Acme\" (AC)")
                .starts_with("a warehouse user may not write price records of brand \"Acme\" (AC)")
        );
    }
}
