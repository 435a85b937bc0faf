//! PDFs made on the spot with lopdf: each page holds the lines given, in Helvetica, and
//! [`pdf_carrying`] adds the texts a reader rarely sees (an information dictionary, XMP
//! metadata, an annotation, a form field, an outline). Shared with `benches/library.rs`
//! (`#[path]`), so the benchmark's 300-page PDF is made the same way.

#![allow(dead_code)]

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, Stream, dictionary};

/// Texts a PDF carries besides its pages'.
#[derive(Default)]
pub struct Carried {
    /// The document information dictionary's entries (`Author`, `Subject`, `Keywords`…).
    pub info: Vec<(&'static str, String)>,
    /// An XMP metadata packet's description (`dc:description`).
    pub xmp: Option<String>,
    /// An XMP metadata packet's title (`dc:title`, as an `rdf:Alt` of one `rdf:li`).
    pub xmp_title: Option<String>,
    /// A text annotation's `/Contents` on the first page.
    pub annotation: Option<String>,
    /// A text form field's value (`/V` of an AcroForm field).
    pub field: Option<String>,
    /// An outline item's `/Title`.
    pub outline: Option<String>,
}

/// A PDF whose page `i` shows `pages[i]`'s lines (a page with no lines has no text, as a
/// scanned page has none).
pub fn pdf(pages: &[Vec<String>]) -> Vec<u8> {
    pdf_carrying(pages, &Carried::default())
}

/// [`pdf`] with the texts of `carried` in the places a PDF keeps them.
pub fn pdf_carrying(pages: &[Vec<String>], carried: &Carried) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids = Vec::new();
    for lines in pages {
        let mut ops = Vec::new();
        if !lines.is_empty() {
            ops.push(Operation::new("BT", vec![]));
            ops.push(Operation::new("Tf", vec!["F1".into(), 11.into()]));
            ops.push(Operation::new("TL", vec![14.into()]));
            ops.push(Operation::new("Td", vec![72.into(), 760.into()]));
            for line in lines {
                ops.push(Operation::new(
                    "Tj",
                    vec![Object::string_literal(line.as_str())],
                ));
                ops.push(Operation::new("T*", vec![]));
            }
            ops.push(Operation::new("ET", vec![]));
        }
        let content = Content { operations: ops };
        let content_id = doc.add_object(Stream::new(
            dictionary! {},
            content.encode().expect("content encodes"),
        ));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(Object::from(page_id));
    }
    let count = kids.len() as i64;
    let first_page = kids.first().cloned();
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let mut catalog = dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    };
    if let Some(text) = &carried.annotation
        && let Some(Object::Reference(page)) = first_page
    {
        let annot = doc.add_object(dictionary! {
            "Type" => "Annot",
            "Subtype" => "Text",
            "Rect" => vec![72.into(), 700.into(), 92.into(), 720.into()],
            "Contents" => Object::string_literal(text.as_str()),
        });
        if let Ok(Object::Dictionary(d)) = doc.get_object_mut(page) {
            d.set("Annots", vec![Object::from(annot)]);
        }
    }
    if let Some(value) = &carried.field {
        let field = doc.add_object(dictionary! {
            "FT" => "Tx",
            "T" => Object::string_literal("notes"),
            "V" => Object::string_literal(value.as_str()),
        });
        catalog.set(
            "AcroForm",
            dictionary! { "Fields" => vec![Object::from(field)] },
        );
    }
    if let Some(title) = &carried.outline {
        let outlines_id = doc.new_object_id();
        let item = doc.add_object(dictionary! {
            "Title" => Object::string_literal(title.as_str()),
            "Parent" => outlines_id,
        });
        doc.objects.insert(
            outlines_id,
            Object::Dictionary(dictionary! {
                "Type" => "Outlines",
                "First" => item,
                "Last" => item,
                "Count" => 1,
            }),
        );
        catalog.set("Outlines", outlines_id);
    }
    if carried.xmp.is_some() || carried.xmp_title.is_some() {
        let mut dc = String::new();
        if let Some(title) = &carried.xmp_title {
            dc.push_str(&format!(
                "<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">{title}</rdf:li></rdf:Alt></dc:title>"
            ));
        }
        if let Some(description) = &carried.xmp {
            dc.push_str(&format!("<dc:description>{description}</dc:description>"));
        }
        let packet = format!(
            "<?xpacket begin=\"\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?><x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\"><rdf:Description xmlns:dc=\"http://purl.org/dc/elements/1.1/\">{dc}</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end=\"w\"?>"
        );
        let metadata = doc.add_object(Stream::new(
            dictionary! { "Type" => "Metadata", "Subtype" => "XML" },
            packet.into_bytes(),
        ));
        catalog.set("Metadata", metadata);
    }
    let catalog_id = doc.add_object(catalog);
    doc.trailer.set("Root", catalog_id);
    if !carried.info.is_empty() {
        let mut info = lopdf::Dictionary::new();
        for (key, value) in &carried.info {
            info.set(*key, Object::string_literal(value.as_str()));
        }
        let info_id = doc.add_object(info);
        doc.trailer.set("Info", info_id);
    }
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("the PDF is written");
    out
}
