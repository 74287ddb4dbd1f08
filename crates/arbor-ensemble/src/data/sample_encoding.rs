//! How a summary's samples travel from a cluster's tasks to the one that
//! merges them: each numeric feature's sample is the `(row hash, value)`
//! pairs of the rows of smallest hash, so every feature without missing
//! values among those rows samples the same rows. Their hashes are sent
//! once, and each such feature sends its values only: about 170 bytes a
//! sampled row of 20 features, not 350 (hashes are varints of about 9.5
//! bytes, values 8). A feature that samples other rows sends its pairs.

use std::collections::HashMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One feature's sample as it is written.
#[derive(Serialize)]
enum SampleOut<'a> {
    /// The values of the shared rows, in their order.
    Shared(Vec<f64>),
    /// Pairs of other rows (or none: a categorical feature).
    Own(&'a [(u64, f64)]),
}

/// One feature's sample as it is read: [`SampleOut`]'s variants, in order.
#[derive(Deserialize)]
enum SampleIn {
    Shared(Vec<f64>),
    Own(Vec<(u64, f64)>),
}

/// A sample's row hashes, in order.
fn hashes(sample: &[(u64, f64)]) -> impl Iterator<Item = u64> + '_ {
    sample.iter().map(|&(h, _)| h)
}

/// Writes `samples` with the hashes most of them share once.
pub(crate) fn serialize<S: Serializer>(samples: &[Vec<(u64, f64)>], serializer: S) -> Result<S::Ok, S::Error> {
    // The list of hashes most samples hold, by a digest of each.
    let digest = |sample: &[(u64, f64)]| {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hashes(sample).for_each(|h| hasher.update(&h.to_le_bytes()));
        hasher.digest()
    };
    let mut seen: HashMap<u64, (usize, usize)> = HashMap::new();
    for (f, sample) in samples.iter().enumerate().filter(|(_, s)| !s.is_empty()) {
        seen.entry(digest(sample)).or_insert((0, f)).0 += 1;
    }
    let shared: Vec<u64> = seen
        .values()
        .max_by_key(|&&(count, f)| (count, std::cmp::Reverse(f)))
        .map_or_else(Vec::new, |&(_, f)| hashes(&samples[f]).collect());
    let features: Vec<SampleOut> = samples
        .iter()
        .map(|sample| match !sample.is_empty() && hashes(sample).eq(shared.iter().copied()) {
            true => SampleOut::Shared(sample.iter().map(|&(_, v)| v).collect()),
            false => SampleOut::Own(sample),
        })
        .collect();
    (shared, features).serialize(serializer)
}

/// Reads what [`serialize`] wrote; a shared sample of another length than
/// the shared hashes is an error.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Vec<(u64, f64)>>, D::Error> {
    let (shared, features): (Vec<u64>, Vec<SampleIn>) = Deserialize::deserialize(deserializer)?;
    features
        .into_iter()
        .map(|sample| match sample {
            SampleIn::Shared(values) if values.len() == shared.len() => {
                Ok(shared.iter().copied().zip(values).collect())
            }
            SampleIn::Shared(values) => {
                Err(D::Error::custom(format!("a sample of {} values for {} shared rows", values.len(), shared.len())))
            }
            SampleIn::Own(pairs) => Ok(pairs),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples written by [`serialize`], for the tests.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Samples(#[serde(with = "super")] Vec<Vec<(u64, f64)>>);

    /// Features sampling the same rows share their hashes; one of other
    /// rows, and none at all, read back as they were; a shared sample of
    /// the wrong length is an error.
    #[test]
    fn samples_read_back_as_written() {
        let rows = |hashes: &[u64], scale: f64| hashes.iter().map(|&h| (h, h as f64 * scale)).collect::<Vec<_>>();
        let samples =
            Samples(vec![rows(&[3, 9, 40], 1.0), Vec::new(), rows(&[3, 9, 41], 2.0), rows(&[3, 9, 40], -0.5)]);
        let bytes = postcard::to_stdvec(&samples).unwrap();
        assert_eq!(postcard::from_bytes::<Samples>(&bytes).unwrap(), samples);
        // Twenty features of 1,000 rows, hashes spread over 64 bits: about half the bytes of the pairs.
        let hashes: Vec<u64> = (1..=1000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let wide = Samples((0..20).map(|f| rows(&hashes, f as f64 + 0.5)).collect());
        let (bytes, pairs) = (postcard::to_stdvec(&wide).unwrap(), postcard::to_stdvec(&wide.0).unwrap());
        assert!(bytes.len() * 10 < pairs.len() * 6, "{} bytes against {} as pairs", bytes.len(), pairs.len());
        assert_eq!(postcard::from_bytes::<Samples>(&bytes).unwrap(), wide);
        let corrupt = postcard::to_stdvec(&(vec![3u64, 9], vec![SampleOut::Shared(vec![1.0])])).unwrap();
        assert!(postcard::from_bytes::<Samples>(&corrupt).is_err(), "two shared rows, one value");
        assert_eq!(
            postcard::from_bytes::<Samples>(&postcard::to_stdvec(&Samples(Vec::new())).unwrap()).unwrap().0.len(),
            0
        );
    }
}
