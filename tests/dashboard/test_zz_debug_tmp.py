import json, time
from tests.dashboard.test_drilldown import *  # noqa
from tests.dashboard.test_drilldown import span  # noqa


def _probe(browser, element):
    return browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot');
        return JSON.stringify({hover: (gd._hoverdata||[]).map(p => [p.x, p.y, p.text, p.curveNumber]),
                               clicks: window.__clicks || [], pending: gd.classList.contains('dash-graph--pending'),
                               n: gd._ev.listeners('plotly_click').length});""", element)


def _arm(browser, element):
    browser.execute_script("""
        const gd = arguments[0].querySelector('.js-plotly-plot'); window.__clicks = [];
        gd.on('plotly_click', e => window.__clicks.push(e.points.map(p => [p.x, p.y, p.text])));""", element)


def test_dbg(site, browser, span):
    open_page(browser, f"{site.url}/utilization{span['search']}", "utilization")
    el = clickable_chart(browser, "utilization", "heatmap")
    _arm(browser, el)
    print("READY", _probe(browser, el), browser.execute_script("return [window.scrollY, window.innerHeight, document.elementFromPoint(arguments[0], arguments[1]).className.baseVal || document.elementFromPoint(arguments[0], arguments[1]).className]", 446, 428))
    cell = click_heatmap_cell(browser, el, 0, 1)
    print("AT", browser.execute_script("const e=document.elementFromPoint(arguments[0], arguments[1]); return e.outerHTML.slice(0,200)", cell['vx'], cell['vy']))
    time.sleep(3)
    print("HEAT", cell, browser.current_url, browser.execute_script("return JSON.stringify(window.__clicks)"))
    team = biggest_team(site, span)
    open_page(browser, f"{site.url}/idle{span['search']}", "idle")
    el = clickable_chart(browser, "idle", "waste")
    _arm(browser, el)
    click_category(browser, el, team)
    time.sleep(3)
    print("IDLE", team, browser.current_url, browser.execute_script("return JSON.stringify(window.__clicks)"))
    print(browser.execute_script("const gd=arguments[0].querySelector('.js-plotly-plot'); return JSON.stringify(gd.data.map(t=>[t.type,t.x,t.y,t.customdata]))", el)[:2000])
    assert 0
