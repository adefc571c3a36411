//! CSV tables read with the `csv` crate: a header or not, a delimiter,
//! columns of numbers (missing fields as NaN) or of text.

/// How to read a table.
#[derive(Clone, Copy, Debug)]
pub struct TableOptions {
    /// `Some(true)`: the first row names the columns; `Some(false)`: it is
    /// data; `None`: a first row that is not all numbers is skipped.
    pub header: Option<bool>,
    /// The field separator.
    pub delimiter: u8,
    /// Whether columns that are not numbers are kept as text (otherwise a
    /// field that is not a number is an error naming its line).
    pub text: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            header: None,
            delimiter: b',',
            text: false,
        }
    }
}

/// One column.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// Numbers; a missing field is NaN.
    Numbers(Vec<f64>),
    /// Text, for a column with a field that is neither a number nor
    /// missing.
    Text(Vec<String>),
}

/// A table: column names (from the header, when read) and columns of equal
/// length.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The header's names, when the table has one.
    pub names: Option<Vec<String>>,
    /// The columns, in file order.
    pub columns: Vec<Column>,
    /// Rows of data.
    pub rows: usize,
}

/// Fields read as missing values (NaN), besides the empty field.
const MISSING: &[&str] = &["NA", "N/A", "NaN", "nan", "null", "NULL"];

fn number(field: &str) -> Option<f64> {
    if field.is_empty() || MISSING.contains(&field) {
        return Some(f64::NAN);
    }
    field.parse().ok()
}

/// Reads `text` (from the file `name`, for messages). A row with a
/// different number of fields from the first, or (without `text`) a field
/// that is not a number, is an error naming its line.
pub fn read_table(text: &str, name: &str, options: TableOptions) -> Result<Table, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(options.delimiter)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut names: Option<Vec<String>> = None;
    let mut fields: Vec<Vec<String>> = Vec::new();
    let mut width: Option<usize> = None;
    let mut seen = false;
    for (index, record) in reader.records().enumerate() {
        let record = record.map_err(|err| format!("{name}: {err}"))?;
        let line = record
            .position()
            .map_or(index as u64 + 1, csv::Position::line);
        if record.iter().all(str::is_empty) {
            continue;
        }
        let row: Vec<String> = record.iter().map(str::to_string).collect();
        match width {
            None => width = Some(row.len()),
            Some(expected) if expected != row.len() => {
                return Err(format!(
                    "{name}:{line}: {} fields where the first row has {expected}",
                    row.len()
                ));
            }
            Some(_) => {}
        }
        let first = !std::mem::replace(&mut seen, true);
        let is_header = first
            && match options.header {
                Some(header) => header,
                None => row.iter().any(|f| number(f).is_none()),
            };
        if is_header {
            // A header found by looking (no `header` option) is skipped.
            if options.header == Some(true) {
                names = Some(row);
            }
            continue;
        }
        if !options.text
            && let Some(field) = row.iter().find(|f| number(f).is_none())
        {
            return Err(format!(
                "{name}:{line}: the field {field:?} is not a number"
            ));
        }
        fields.push(row);
    }
    let width = width.unwrap_or(0);
    let columns = (0..width)
        .map(|c| {
            let numbers: Option<Vec<f64>> = fields.iter().map(|row| number(&row[c])).collect();
            match numbers {
                Some(numbers) => Column::Numbers(numbers),
                None => Column::Text(fields.iter().map(|row| row[c].clone()).collect()),
            }
        })
        .collect();
    Ok(Table {
        names,
        columns,
        rows: fields.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(header: Option<bool>, delimiter: u8, text: bool) -> TableOptions {
        TableOptions {
            header,
            delimiter,
            text,
        }
    }

    #[test]
    fn headers_missing_values_text_and_delimiters() {
        let table = read_table(
            "a;b;c\n1;x;\n2.5;y;3\n",
            "t.csv",
            with(Some(true), b';', true),
        )
        .unwrap();
        assert_eq!(table.names, Some(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(table.rows, 2);
        assert_eq!(table.columns[0], Column::Numbers(vec![1.0, 2.5]));
        assert_eq!(table.columns[1], Column::Text(vec!["x".into(), "y".into()]));
        match &table.columns[2] {
            Column::Numbers(v) => assert!(v[0].is_nan() && v[1] == 3.0),
            other => panic!("{other:?}"),
        }
        // Without a header the first row is data.
        let table = read_table("1,2\n3,NA\n", "t.csv", with(Some(false), b',', false)).unwrap();
        assert_eq!(table.rows, 2);
        assert!(table.names.is_none());
    }

    #[test]
    fn ragged_rows_and_text_are_errors_naming_the_line() {
        let error = read_table("a,b\n1,2\n3\n", "t.csv", with(Some(true), b',', true)).unwrap_err();
        assert_eq!(error, "t.csv:3: 1 fields where the first row has 2");
        let error = read_table("1,2\n3,x\n", "t.csv", TableOptions::default()).unwrap_err();
        assert_eq!(error, "t.csv:2: the field \"x\" is not a number");
    }
}
