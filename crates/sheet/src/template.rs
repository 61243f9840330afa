//! The `.xlsx` template of each file type (`GET /api/file/template/<fileType>`), derived from the
//! column specs so it always lists exactly the columns the processors read.

use rust_xlsxwriter as xlsx;

use crate::cell::Cell;
use crate::columns::{FileType, Kind, Need};

/// The template of a file type: a header row, required columns in bold on a tinted fill, and one
/// realistic example row; codes are text-formatted so that Excel keeps barcodes' digits.
pub fn template(file_type: FileType) -> Vec<u8> {
    build(file_type).expect("writing a template in memory does not fail")
}

/// The light fill behind required headers.
const REQUIRED_FILL: u32 = 0xFFF2CC;

fn build(file_type: FileType) -> Result<Vec<u8>, xlsx::XlsxError> {
    let required = xlsx::Format::new()
        .set_bold()
        .set_background_color(REQUIRED_FILL);
    let optional = xlsx::Format::new();
    let text = xlsx::Format::new().set_num_format("@");
    let date = xlsx::Format::new().set_num_format("dd/mm/yyyy");

    let mut workbook = xlsx::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.set_name(file_type.as_str())?;
    for (index, (column, need)) in file_type.columns().iter().enumerate() {
        let col = index as u16;
        let label = column.label();
        let header = if *need == Need::Optional {
            &optional
        } else {
            &required
        };
        sheet.write_string_with_format(0, col, label, header)?;
        let width = column.example().chars().count().max(label.len()) + 2;
        sheet.set_column_width(col, width.min(60) as f64)?;
        let example = column.example();
        match column.kind() {
            Kind::Code => {
                sheet.set_column_format(col, &text)?;
                sheet.write_string_with_format(1, col, example, &text)?;
            }
            Kind::Text => {
                sheet.write_string(1, col, example)?;
            }
            Kind::Number | Kind::Integer => {
                let number = Cell::text(example).as_number().unwrap_or_default();
                sheet.write_number(1, col, number)?;
            }
            Kind::Bool => {
                let yes = Cell::text(example).as_bool().unwrap_or_default();
                sheet.write_boolean(1, col, yes)?;
            }
            Kind::Date => {
                let day = xlsx::ExcelDateTime::parse_from_str(example)?;
                sheet.write_datetime_with_format(1, col, &day, &date)?;
            }
        }
    }
    sheet.set_freeze_panes(1, 0)?;
    workbook.save_to_buffer()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{Column, ColumnMap};
    use crate::{Format, Limits, read};

    #[test]
    fn every_template_reads_back_with_its_columns_and_example() {
        for file_type in FileType::ALL {
            let bytes = template(file_type);
            let table = read(&bytes, Format::Xlsx, &Limits::default()).unwrap();
            let map = ColumnMap::match_headers(file_type, table.header()).unwrap();
            assert!(map.unknown().is_empty(), "{file_type}");
            assert_eq!(table.header().cells().len(), file_type.columns().len());
            assert_eq!(table.rows().len(), 1, "{file_type}");
            let example = &table.rows()[0];
            assert_eq!(example.number(), 2);
            for (column, _) in file_type.columns() {
                let cell = example.get(&map, *column);
                let expected = Cell::text(column.example());
                match column.kind() {
                    Kind::Text | Kind::Code => assert_eq!(cell, &expected, "{column:?}"),
                    Kind::Number | Kind::Integer => {
                        assert_eq!(cell.as_number(), expected.as_number(), "{column:?}")
                    }
                    Kind::Bool => assert_eq!(cell.as_bool(), expected.as_bool(), "{column:?}"),
                    Kind::Date => assert_eq!(cell.as_date(), expected.as_date(), "{column:?}"),
                }
            }
        }
    }

    #[test]
    fn barcodes_are_text_in_the_template() {
        let bytes = template(FileType::Stock);
        let table = read(&bytes, Format::Xlsx, &Limits::default()).unwrap();
        let map = ColumnMap::match_headers(FileType::Stock, table.header()).unwrap();
        assert_eq!(
            table.rows()[0].get(&map, Column::Barcode),
            &Cell::Text("5012345678900".into())
        );
    }
}
