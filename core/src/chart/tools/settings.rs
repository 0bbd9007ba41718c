//! Settings tools: `settings_get`, `settings_update`, `settings_reset`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{input, object, object_at_least, reader, writer};
use crate::chart::Settings;
use crate::envelope::ToolError;
use crate::registry::{RegistryBuilder, RegistryError};
use crate::tool::ToolContext;

pub(super) fn register_reads(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    reader(
        builder,
        "settings_get",
        "Get settings",
        "Returns the chart's display settings.",
        object(json!({}), &[]),
        |context, _raw| {
            Ok(context
                .chart()
                .read(|state| json!({"settings": state.settings})))
        },
    )
}

pub(super) fn register_writes(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    writer(
        builder,
        "settings_update",
        "Update settings",
        "Changes one or more display settings; the others keep their values.",
        object_at_least(
            json!({
                "theme": {"enum": ["light", "dark"]},
                "chartType": {"enum": ["candles", "hollow-candles", "bars", "line", "area"]},
                "showVolume": {"type": "boolean"},
                "showGrid": {"type": "boolean"},
                "priceScale": {"enum": ["linear", "log", "percent"]},
                "timezone": {"enum": ["exchange", "utc", "local"]},
                "crosshair": {"type": "boolean"}
            }),
            &[],
            1,
        ),
        settings_update,
    )?;
    writer(
        builder,
        "settings_reset",
        "Reset settings",
        "Restores every display setting to its default.",
        object(json!({}), &[]),
        |context, _raw| {
            context.chart().update(|state| {
                state.settings = Settings::default();
                Ok(json!({"settings": state.settings}))
            })
        },
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SettingsUpdate {
    theme: Option<String>,
    chart_type: Option<String>,
    show_volume: Option<bool>,
    show_grid: Option<bool>,
    price_scale: Option<String>,
    timezone: Option<String>,
    crosshair: Option<bool>,
}

fn settings_update(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: SettingsUpdate = input(raw)?;
    context.chart().update(|state| {
        let settings = &mut state.settings;
        let replace = |slot: &mut String, value: Option<String>| {
            if let Some(value) = value {
                *slot = value;
            }
        };
        replace(&mut settings.theme, request.theme);
        replace(&mut settings.chart_type, request.chart_type);
        replace(&mut settings.price_scale, request.price_scale);
        replace(&mut settings.timezone, request.timezone);
        settings.show_volume = request.show_volume.unwrap_or(settings.show_volume);
        settings.show_grid = request.show_grid.unwrap_or(settings.show_grid);
        settings.crosshair = request.crosshair.unwrap_or(settings.crosshair);
        Ok(json!({"settings": settings}))
    })
}
