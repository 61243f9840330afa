//! The columns of each file type (docs/API.md, "Files: uploads and processing"), declared once as data: header matching, the
//! "missing required column" check and the templates all read this table.

use std::fmt;
use std::str::FromStr;

use crate::error::{SheetError, column_letters};
use crate::table::Row;

/// What a column holds, so a template can write its example with the right cell type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Free text.
    Text,
    /// An identifier that may look like a number but must stay text (barcodes, codes).
    Code,
    /// A decimal number (prices).
    Number,
    /// A whole number (quantities, positions).
    Integer,
    /// Yes or no.
    Bool,
    /// A calendar date.
    Date,
}

/// Declares [`Column`] with, for each column, its label, header aliases, kind and an example
/// value, so that nothing about a column is written twice.
macro_rules! columns {
    ($($variant:ident: $label:literal $([$($alias:literal),+])?, $kind:ident, $example:literal;)+) => {
        /// A column that some file type knows; processors read cells with
        /// [`Row::get`](crate::Row::get).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Column {
            $(
                #[doc = concat!("The \"", $label, "\" column.")]
                $variant,
            )+
        }

        impl Column {
            /// Every known column, in declaration order.
            pub const ALL: &'static [Column] = &[$(Column::$variant),+];

            /// The header as the contract and the templates spell it.
            pub fn label(self) -> &'static str {
                match self {
                    $(Column::$variant => $label,)+
                }
            }

            /// Other headers accepted for this column.
            pub fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(Column::$variant => &[$($($alias),+)?],)+
                }
            }

            /// What the column holds.
            pub(crate) fn kind(self) -> Kind {
                match self {
                    $(Column::$variant => Kind::$kind,)+
                }
            }

            /// A realistic value, for the template's example row.
            pub(crate) fn example(self) -> &'static str {
                match self {
                    $(Column::$variant => $example,)+
                }
            }
        }
    };
}

columns! {
    ProductCode: "Product Code", Code, "TSHIRT-001";
    Title: "Title", Text, "Classic Crew T-Shirt";
    Barcode: "Barcode", Code, "5012345678900";
    VariantCode: "Variant Code", Code, "TSHIRT-001-NAVY-M";
    Colour: "Colour", Text, "Navy";
    Size: "Size", Text, "M";
    Sequence: "Sequence", Integer, "1";
    Rrp: "RRP", Number, "25";
    Price: "Price", Number, "19.99";
    Vatable: "Vatable", Bool, "true";
    Category: "Category", Text, "T-Shirts";
    Description: "Description", Text, "Soft cotton jersey with a crew neck";
    Season: "Season", Text, "SS24";
    Origin: "Origin", Text, "Portugal";
    Composition: "Composition", Text, "100% cotton";
    CareInstructions: "Care Instructions", Text, "Machine wash at 30°C";
    CommodityCode: "Commodity Code", Code, "6109100010";
    InStock: "In Stock" ["Quantity", "Qty"], Integer, "12";
    Demand: "Demand", Integer, "3";
    Supply: "Supply", Integer, "20";
    ImageUrl: "Image URL", Text, "https://images.example.com/tshirt-001-navy.jpg";
    Position: "Position", Integer, "1";
    OrderRef: "Order Ref", Code, "ORD-10045";
    ItemRef: "Item Ref", Code, "ORD-10045-1";
    ShipQty: "Ship Qty", Integer, "1";
    Carrier: "Carrier", Text, "Royal Mail";
    TrackingRef: "Tracking Ref", Code, "JD014600003828";
    ShipDate: "Ship Date", Date, "2024-03-15";
    Currency: "Currency", Code, "EUR";
}

/// Whether a file type needs a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The file is refused without it.
    Required,
    /// Read when present.
    Optional,
    /// The file type's `OneOf` columns form one group, of which at least one is required
    /// (image: Product Code or Barcode; orderDispatch: Barcode or Item Ref).
    OneOf,
}

use Column as C;
use Need::{OneOf, Optional, Required};

/// The five kinds of upload of docs/API.md, "Files: uploads and processing"; the part name of an upload starts with one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// Products and their variants.
    Product,
    /// Stock levels of one warehouse.
    Stock,
    /// Prices for one host and period.
    Price,
    /// Product images.
    Image,
    /// Shipped quantities of orders.
    OrderDispatch,
}

impl FileType {
    /// Every file type, in contract order.
    pub const ALL: [FileType; 5] = [
        FileType::Product,
        FileType::Stock,
        FileType::Price,
        FileType::Image,
        FileType::OrderDispatch,
    ];

    /// The name as spelled in the contract and in part names ("orderDispatch").
    pub fn as_str(self) -> &'static str {
        match self {
            FileType::Product => "product",
            FileType::Stock => "stock",
            FileType::Price => "price",
            FileType::Image => "image",
            FileType::OrderDispatch => "orderDispatch",
        }
    }

    /// The file type spelled exactly as the contract does; `None` otherwise.
    pub fn parse(name: &str) -> Option<FileType> {
        FileType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The file type a caller names, in any case (`orderdispatch` for `orderDispatch`): in an
    /// upload's part name or a template's path.
    pub fn named(name: &str) -> Option<FileType> {
        FileType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// The part name an upload of this type takes (docs/API.md, "Files: uploads and processing"), for messages.
    pub fn part_usage(self) -> &'static str {
        match self {
            FileType::Product => "product,<brand>",
            FileType::Stock => "stock,<brand>,<warehouse>",
            FileType::Price => "price,<brand>,<host>,<DD/MM/YYYY>[,<DD/MM/YYYY>]",
            FileType::Image => "image,<brand>",
            FileType::OrderDispatch => "orderDispatch,<brand>",
        }
    }

    /// The columns of this file type, in template order, with what it needs of each.
    pub fn columns(self) -> &'static [(Column, Need)] {
        match self {
            FileType::Product => &[
                (C::ProductCode, Required),
                (C::Title, Required),
                (C::Barcode, Required),
                (C::VariantCode, Optional),
                (C::Colour, Optional),
                (C::Size, Optional),
                (C::Sequence, Optional),
                (C::Rrp, Optional),
                (C::Price, Optional),
                (C::Vatable, Optional),
                (C::Category, Optional),
                (C::Description, Optional),
                (C::Season, Optional),
                (C::Origin, Optional),
                (C::Composition, Optional),
                (C::CareInstructions, Optional),
                (C::CommodityCode, Optional),
            ],
            FileType::Stock => &[
                (C::Barcode, Required),
                (C::InStock, Required),
                (C::Demand, Optional),
                (C::Supply, Optional),
            ],
            FileType::Price => &[
                (C::Barcode, Required),
                (C::Price, Required),
                (C::Rrp, Optional),
                (C::Currency, Optional),
            ],
            FileType::Image => &[
                (C::ProductCode, OneOf),
                (C::Barcode, OneOf),
                (C::ImageUrl, Required),
                (C::Position, Optional),
            ],
            FileType::OrderDispatch => &[
                (C::OrderRef, Required),
                (C::Barcode, OneOf),
                (C::ItemRef, OneOf),
                (C::ShipQty, Required),
                (C::Carrier, Optional),
                (C::TrackingRef, Optional),
                (C::ShipDate, Optional),
            ],
        }
    }
}

impl FromStr for FileType {
    type Err = SheetError;

    fn from_str(name: &str) -> Result<FileType, SheetError> {
        FileType::parse(name).ok_or_else(|| SheetError::UnknownFileType(name.to_string()))
    }
}

impl fmt::Display for FileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A header as it is compared: lower case, without whitespace, `_` or `-`, so that
/// "product_code", "Product Code" and "PRODUCT-CODE" are the same header.
pub fn normalize_header(header: &str) -> String {
    header
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Which column of a sheet serves each known column of a file type, found from its header row.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMap {
    file_type: FileType,
    indexes: [Option<usize>; Column::ALL.len()],
    unknown: Vec<String>,
}

impl ColumnMap {
    /// Matches a header row against a file type: each known column found (case and spacing
    /// aside), the unknown headers kept for a warning, and an error naming every missing
    /// required column, or a column named twice.
    pub fn match_headers(file_type: FileType, header: &Row) -> Result<ColumnMap, SheetError> {
        let known: Vec<(Column, Vec<String>)> = file_type
            .columns()
            .iter()
            .map(|(column, _)| {
                let names = std::iter::once(column.label())
                    .chain(column.aliases().iter().copied())
                    .map(normalize_header)
                    .collect();
                (*column, names)
            })
            .collect();
        let mut map = ColumnMap {
            file_type,
            indexes: [None; Column::ALL.len()],
            unknown: Vec::new(),
        };
        for (index, cell) in header.cells().iter().enumerate() {
            let Some(text) = cell.as_text() else {
                continue;
            };
            let name = normalize_header(&text);
            let found = known
                .iter()
                .find(|(_, names)| names.contains(&name))
                .map(|(column, _)| *column);
            let Some(column) = found else {
                map.unknown.push(text.into_owned());
                continue;
            };
            if let Some(first) = map.indexes[column as usize] {
                let first_text = header.cell(first).as_text().unwrap_or_default();
                return Err(SheetError::DuplicateColumn {
                    column: column.label(),
                    first: format!("\"{first_text}\" (column {})", column_letters(first)),
                    second: format!("\"{text}\" (column {})", column_letters(index)),
                });
            }
            map.indexes[column as usize] = Some(index);
        }
        map.check_required()?;
        Ok(map)
    }

    /// Fails naming every required column (and the one-of group) that the header lacks.
    fn check_required(&self) -> Result<(), SheetError> {
        let columns = self.file_type.columns();
        let group: Vec<Column> = columns
            .iter()
            .filter(|(_, need)| *need == OneOf)
            .map(|(column, _)| *column)
            .collect();
        let group_missing = !group.is_empty() && !group.iter().any(|c| self.has(*c));
        let mut missing = Vec::new();
        let mut group_named = false;
        for (column, need) in columns {
            match need {
                Required if !self.has(*column) => missing.push(describe(*column)),
                OneOf if group_missing && !group_named => {
                    group_named = true;
                    let labels: Vec<_> = group.iter().map(|c| describe(*c)).collect();
                    missing.push(labels.join(" or "));
                }
                _ => {}
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(SheetError::MissingColumns(missing))
        }
    }

    /// The file type the headers were matched against.
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// The 0-based index of the sheet column serving `column`, if the file has it.
    pub fn index(&self, column: Column) -> Option<usize> {
        self.indexes[column as usize]
    }

    /// Whether the file has `column`.
    pub fn has(&self, column: Column) -> bool {
        self.index(column).is_some()
    }

    /// The headers that match no column of the file type, as written, for a warning.
    pub fn unknown(&self) -> &[String] {
        &self.unknown
    }
}

/// A column's label with its aliases, for a message: "In Stock (or Quantity, Qty)".
fn describe(column: Column) -> String {
    match column.aliases() {
        [] => column.label().to_string(),
        aliases => format!("{} (or {})", column.label(), aliases.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;

    fn header(names: &[&str]) -> Row {
        Row::new(1, names.iter().map(|n| Cell::text(n)).collect())
    }

    #[test]
    fn file_type_names_are_exact() {
        for file_type in FileType::ALL {
            assert_eq!(FileType::parse(file_type.as_str()), Some(file_type));
            assert_eq!(file_type.as_str().parse::<FileType>(), Ok(file_type));
        }
        assert_eq!(FileType::parse("orderdispatch"), None);
        assert_eq!(FileType::parse("Product"), None);
        assert_eq!(
            "images".parse::<FileType>().unwrap_err().to_string(),
            "unknown file type \"images\""
        );
    }

    #[test]
    fn every_file_type_lists_a_column_once() {
        for file_type in FileType::ALL {
            let columns = file_type.columns();
            for (i, (column, _)) in columns.iter().enumerate() {
                assert!(
                    columns[..i].iter().all(|(c, _)| c != column),
                    "{file_type}: {column:?} twice"
                );
            }
        }
    }

    #[test]
    fn no_two_names_of_a_file_type_normalise_alike() {
        for file_type in FileType::ALL {
            let mut names: Vec<String> = file_type
                .columns()
                .iter()
                .flat_map(|(c, _)| std::iter::once(c.label()).chain(c.aliases().iter().copied()))
                .map(normalize_header)
                .collect();
            let count = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), count, "{file_type}");
        }
    }

    #[test]
    fn headers_match_ignoring_case_spaces_underscores_and_dashes() {
        let row = header(&[
            " product_code ",
            "TITLE",
            "Bar-Code",
            "Launch Date",
            "",
            "care instructions",
        ]);
        let map = ColumnMap::match_headers(FileType::Product, &row).unwrap();
        assert_eq!(map.index(Column::ProductCode), Some(0));
        assert_eq!(map.index(Column::Title), Some(1));
        assert_eq!(map.index(Column::Barcode), Some(2));
        assert_eq!(map.index(Column::CareInstructions), Some(5));
        assert_eq!(map.index(Column::Colour), None);
        assert_eq!(map.unknown(), &["Launch Date".to_string()]);
        assert_eq!(map.file_type(), FileType::Product);
    }

    #[test]
    fn aliases_serve_their_column() {
        for name in ["In Stock", "IN-STOCK", "quantity", "QTY"] {
            let map =
                ColumnMap::match_headers(FileType::Stock, &header(&["Barcode", name])).unwrap();
            assert_eq!(map.index(Column::InStock), Some(1), "{name}");
        }
    }

    #[test]
    fn a_column_of_another_file_type_is_unknown() {
        let map = ColumnMap::match_headers(FileType::Stock, &header(&["Barcode", "Qty", "Price"]))
            .unwrap();
        assert_eq!(map.unknown(), &["Price".to_string()]);
        assert!(!map.has(Column::Price));
    }

    #[test]
    fn every_missing_required_column_is_named() {
        let err =
            ColumnMap::match_headers(FileType::Product, &header(&["Title", "Colour"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing required columns: Product Code, Barcode"
        );
        let err = ColumnMap::match_headers(FileType::Stock, &header(&["Barcode"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing required column: In Stock (or Quantity, Qty)"
        );
        let err = ColumnMap::match_headers(FileType::Image, &header(&["Position"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing required columns: Product Code or Barcode, Image URL"
        );
        let err =
            ColumnMap::match_headers(FileType::OrderDispatch, &header(&["Order Ref", "Ship Qty"]))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing required column: Barcode or Item Ref"
        );
    }

    #[test]
    fn one_of_a_group_is_enough() {
        for name in ["Product Code", "Barcode"] {
            let map = ColumnMap::match_headers(FileType::Image, &header(&[name, "Image URL"]));
            assert!(map.is_ok(), "{name}");
        }
        let map = ColumnMap::match_headers(
            FileType::OrderDispatch,
            &header(&["Order Ref", "Item Ref", "Ship Qty"]),
        )
        .unwrap();
        assert!(map.has(Column::ItemRef));
        assert!(!map.has(Column::Barcode));
    }

    #[test]
    fn a_column_named_twice_is_refused() {
        let err =
            ColumnMap::match_headers(FileType::Stock, &header(&["Barcode", "Qty", "Quantity"]))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "column In Stock appears twice: \"Qty\" (column B) and \"Quantity\" (column C)"
        );
    }

    #[test]
    fn row_get_reads_through_the_map() {
        let map =
            ColumnMap::match_headers(FileType::Price, &header(&["Price", "Barcode"])).unwrap();
        let row = Row::new(2, vec![Cell::Number(9.5), Cell::text("123")]);
        assert_eq!(row.get(&map, Column::Barcode), &Cell::text("123"));
        assert_eq!(row.get(&map, Column::Price), &Cell::Number(9.5));
        assert_eq!(row.get(&map, Column::Rrp), &Cell::Empty);
        assert_eq!(row.get(&map, Column::Currency), &Cell::Empty);
    }

    #[test]
    fn a_price_file_may_name_each_prices_currency() {
        let map =
            ColumnMap::match_headers(FileType::Price, &header(&["Barcode", "Price", "currency"]))
                .unwrap();
        assert_eq!(map.index(Column::Currency), Some(2));
        assert!(map.unknown().is_empty());
        let stock =
            ColumnMap::match_headers(FileType::Stock, &header(&["Barcode", "Qty", "Currency"]))
                .unwrap();
        assert_eq!(stock.unknown(), &["Currency".to_string()]);
    }

    #[test]
    fn examples_fit_their_kind() {
        for column in Column::ALL {
            let cell = Cell::text(column.example());
            let fits = match column.kind() {
                Kind::Text | Kind::Code => cell.as_text().is_some(),
                Kind::Number => cell.as_number().is_some(),
                Kind::Integer => cell.as_integer().is_some(),
                Kind::Bool => cell.as_bool().is_some(),
                Kind::Date => cell.as_date().is_some(),
            };
            assert!(fits, "{column:?}");
        }
    }
}
