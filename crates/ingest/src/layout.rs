//! Which field each column of an upload sheet comes from, for exports (docs/API.md, "Exports: CSV and XLSX"): a
//! product, stock or price export has exactly the columns of that upload type, so that an
//! export, edited in a spreadsheet program and uploaded again, applies. The columns are the
//! sheet crate's ([`FileType::columns`]); this table only says where their values are, next to
//! the processors that read them (a test holds the two together).

use brandhub_catalog::Res;
use brandhub_sheet::{Column as C, FileType};

/// The sheet of one upload type as records of one resource.
#[derive(Debug)]
pub struct SheetLayout {
    /// The upload type whose columns the sheet has.
    pub file_type: FileType,
    /// The resource whose records are the rows (a product sheet has a row per variant).
    pub rows: Res,
    /// Each column of the upload type and the path of its value in a row's record.
    pub columns: &'static [(C, &'static str)],
}

/// A product sheet: one row per variant, its product's fields repeated.
pub static PRODUCT: SheetLayout = SheetLayout {
    file_type: FileType::Product,
    rows: Res::Variant,
    columns: &[
        (C::ProductCode, "variant_product.code"),
        (C::Title, "variant_product.title"),
        (C::Barcode, "barcode"),
        (C::VariantCode, "code"),
        (C::Colour, "colour"),
        (C::Size, "size"),
        (C::Sequence, "sequence"),
        (C::Rrp, "rrp"),
        (C::Price, "detail.price"),
        (C::Vatable, "vatable"),
        (C::Category, "variant_product.category"),
        (C::Description, "variant_product.description"),
        (C::Season, "variant_product.season"),
        (C::Origin, "variant_product.origin"),
        (C::Composition, "variant_product.composition"),
        (C::CareInstructions, "variant_product.careInstructions"),
        (C::CommodityCode, "variant_product.commodityCode"),
    ],
};

/// A stock sheet: one row per stock record (a warehouse's count of a variant).
pub static STOCK: SheetLayout = SheetLayout {
    file_type: FileType::Stock,
    rows: Res::Stock,
    columns: &[
        (C::Barcode, "stock_variant.barcode"),
        (C::InStock, "inStock"),
        (C::Demand, "demand"),
        (C::Supply, "supply"),
    ],
};

/// A price sheet: one row per price.
pub static PRICE: SheetLayout = SheetLayout {
    file_type: FileType::Price,
    rows: Res::Price,
    columns: &[
        (C::Barcode, "price_variant.barcode"),
        (C::Price, "price"),
        (C::Rrp, "rrp"),
        (C::Currency, "currency"),
    ],
};

/// The sheet an export of `resource` takes when it does not choose its fields, and the
/// relation from the sheet's rows to `resource` when they are other records (products are
/// exported as their variants, through `variant_product`).
pub fn sheet_layout(resource: Res) -> Option<(&'static SheetLayout, Option<&'static str>)> {
    match resource {
        Res::Product => Some((&PRODUCT, Some("variant_product"))),
        Res::Variant => Some((&PRODUCT, None)),
        Res::Stock => Some((&STOCK, None)),
        Res::Price => Some((&PRICE, None)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use brandhub_catalog::catalog;

    #[test]
    fn each_layout_has_its_upload_types_columns_in_template_order() {
        for layout in [&PRODUCT, &STOCK, &PRICE] {
            let template: Vec<C> = layout.file_type.columns().iter().map(|(c, _)| *c).collect();
            let exported: Vec<C> = layout.columns.iter().map(|(c, _)| *c).collect();
            assert_eq!(exported, template, "{:?}", layout.file_type);
            let rows = catalog().get(layout.rows);
            for (column, path) in layout.columns {
                let (relation, field) = match path.split_once('.') {
                    Some((first, rest)) if rows.relation(first).is_some() => (Some(first), rest),
                    _ => (None, *path),
                };
                let owner = match relation {
                    Some(name) => catalog().target(rows.relation(name).unwrap()),
                    None => rows,
                };
                assert!(
                    owner.field_at(field).is_some_and(|f| f.has_column()),
                    "{column:?}: {path} is not a stored field of {}",
                    owner.name
                );
            }
        }
    }

    #[test]
    fn product_columns_come_from_the_fields_the_processor_writes() {
        for (column, path) in crate::product::PRODUCT_TEXTS {
            let exported = format!("variant_product.{path}");
            assert!(
                PRODUCT.columns.contains(&(column, exported.as_str())),
                "{column:?}"
            );
        }
        for (column, path) in crate::product::VARIANT_TEXTS {
            assert!(PRODUCT.columns.contains(&(column, path)), "{column:?}");
        }
    }

    #[test]
    fn products_are_exported_as_their_variants() {
        let (layout, through) = sheet_layout(Res::Product).unwrap();
        let variant = catalog().get(layout.rows);
        let relation = variant.relation(through.unwrap()).unwrap();
        assert_eq!(catalog().target(relation).name, "product");
        assert!(sheet_layout(Res::Order).is_none());
    }
}
