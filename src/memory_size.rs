//! Sizes of memory as people write them on a command line: `2GB`, `512MiB`, `1.5G`, `300000000`.

/// Bytes of a size written with an optional unit: B, KB/MB/GB/TB (powers of
/// 1000; K/M/G/T alike), KiB/MiB/GiB/TiB (powers of 1024); case is ignored.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 =
        number.parse().map_err(|_| format!("'{text}' is not a size: write e.g. 2GB, 512MiB or 300000000"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!("'{other}' in '{text}' is not a unit: use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"))
        }
    };
    let bytes = number * scale;
    if !(1.0..=u64::MAX as f64).contains(&bytes) {
        return Err(format!("'{text}' is not a size from 1 byte to {} bytes", u64::MAX));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse_size("300000000"), Ok(300_000_000));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size("1.5g"), Ok(1_500_000_000));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert!(parse_size("lots").unwrap_err().contains("'lots' is not a size"));
        assert!(parse_size("5 parsecs").unwrap_err().contains("'parsecs'"));
        assert!(parse_size("0").is_err());
    }
}
