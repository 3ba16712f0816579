//! The text the mock answers with, and the words of the prompts it reads: a mock token is one
//! word.

use serde_json::Value;

pub const WORDS: [&str; 8] = [" the", " of", " and", " to", " in", " is", " it", " that"];

/// The words of `--varied-text` answers.
const VARIED: [&str; 64] = [
    " the", " of", " and", " to", " in", " is", " it", " that", " for", " was", " on", " are", " with", " as", " this",
    " be", " at", " by", " from", " or", " have", " an", " they", " which", " one", " you", " were", " her", " all",
    " she", " there", " would", " their", " we", " him", " been", " has", " when", " who", " will", " more", " no",
    " if", " out", " so", " said", " what", " up", " its", " about", " into", " than", " them", " can", " only",
    " other", " new", " some", " could", " time", " these", " two", " may", " then",
];

/// Word `i` of the answer to request `n`: [`WORDS`] in turn, or with `varied` a draw from
/// [`VARIED`] with numbers (1 in 16 words), a comma or a full stop (1 in 16 each) and a
/// capitalized word after a full stop.
pub fn answer_word(varied: bool, n: u64, i: u64) -> std::borrow::Cow<'static, str> {
    use std::borrow::Cow;
    if !varied {
        return Cow::Borrowed(WORDS[i as usize % WORDS.len()]);
    }
    let draw = |k: u64| {
        let mut z = (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let r = draw(i);
    let word = VARIED[(r >> 8) as usize % VARIED.len()];
    match r % 16 {
        0 => Cow::Owned(format!(" {}", (r >> 20) % 100_000)),
        1 => Cow::Borrowed(","),
        2 => Cow::Borrowed("."),
        _ if i > 0 && draw(i - 1) % 16 == 2 => {
            let mut w = word.to_string();
            if let Some(c) = w.get_mut(1..2) {
                c.make_ascii_uppercase();
            }
            Cow::Owned(w)
        }
        _ => Cow::Borrowed(word),
    }
}

/// How many words a prompt has (the messages' contents, or the prompt string).
pub fn words_in(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.split_whitespace().count() as u64,
        Value::Array(a) => a.iter().map(|m| m.get("content").map_or(0, words_in)).sum(),
        _ => 0,
    }
}

/// The prompt's words in order (the messages' contents, or the prompt string).
pub fn words_of<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.extend(s.split_whitespace()),
        Value::Array(a) => a.iter().filter_map(|m| m.get("content")).for_each(|c| words_of(c, out)),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn varied_answers_differ_between_requests_and_repeat_for_one() {
        let answer = |n: u64| (0..200).map(|i| answer_word(true, n, i).into_owned()).collect::<String>();
        assert_eq!(answer(7), answer(7));
        assert_ne!(answer(7), answer(8));
        let a = answer(7);
        assert!(a.contains(',') && a.contains(". ") && a.chars().any(|c| c.is_ascii_digit()), "{a}");
        assert!(a.chars().any(|c| c.is_ascii_uppercase()), "{a}");
        assert_eq!(answer_word(false, 7, 9), WORDS[1]);
    }
}
